package main

import (
	"go/token"
	"go/types"
	"testing"
)

func TestLowerName(t *testing.T) {
	for in, want := range map[string]string{
		"New": "new", "HTTPServer": "httpServer", "ID": "id", "URLFor": "urlFor", "A": "a", "Outbound": "outbound", "TTL": "ttl",
		"X2": "x2",
	} {
		if got := lowerName(in); got != want {
			t.Errorf("lowerName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAllowList(t *testing.T) {
	pkg := types.NewPackage(module+"/pkg/scaling/decider", "decider")
	code := types.NewNamed(types.NewTypeName(token.NoPos, pkg, "Code", nil), types.Typ[types.String], nil)
	a := allowList{lines: []string{"pkg/config.Annotation*", "pkg/config/hpa.*"}, constants: map[string]bool{"pkg/scaling/decider.Code": true}}
	for _, tc := range []struct {
		key  string
		obj  types.Object
		want bool
	}{
		{"pkg/config.AnnotationWindow", nil, true},
		{"pkg/config.KeyWindow", nil, false},
		{"pkg/config/hpa.History.Seed", nil, true},
		{"pkg/scaling/decider.NoData", types.NewConst(token.NoPos, pkg, "NoData", code, nil), true},
		{"pkg/scaling/decider.MaxMetricValue", types.NewConst(token.NoPos, pkg, "MaxMetricValue", types.Typ[types.Float64], nil), false},
	} {
		if got := a.allows(ident{key: tc.key}, tc.obj); got != tc.want {
			t.Errorf("allows(%s) = %v, want %v", tc.key, got, tc.want)
		}
	}
}
