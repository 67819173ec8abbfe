package envconfig

import (
	"strings"
	"testing"
	"time"

	"ebb.dev/ebb/pkg/fielderr"
)

type fuzzed struct {
	D    time.Duration
	N    int64
	B    int64
	On   bool
	Name string
}

// FuzzParsers: no value makes a parser panic; a value a parser accepts
// lands within its bounds, and one it refuses leaves the field alone and
// comes back from Load as one fielderr.Error with a rule and a fix.
func FuzzParsers(f *testing.F) {
	for _, s := range []string{"", "0", "1s", "-1", "9223372036854775807", "8Ei", "3Gi", "1Ki", "true", "cluster.local", ".a..b.", "Ünï", "1e3"} {
		f.Add(s)
	}
	const lo, hi = -5, 1 << 40
	f.Fuzz(func(t *testing.T, v string) {
		var got fuzzed
		parsers := map[string]func(*fuzzed, string) error{
			"duration": Duration(time.Millisecond, time.Hour, func(x *fuzzed) *time.Duration { return &x.D }),
			"int64":    Int64(lo, hi, func(x *fuzzed) *int64 { return &x.N }),
			"bytes":    Bytes(0, hi, func(x *fuzzed) *int64 { return &x.B }),
			"bool":     Bool(func(x *fuzzed) *bool { return &x.On }),
			"dnsname":  DNSName(true, func(x *fuzzed) *string { return &x.Name }),
		}
		for name, p := range parsers {
			before := got
			if err := p(&got, v); err != nil {
				if got != before {
					t.Errorf("%s(%q) refused with %v but changed the field: %+v", name, v, err, got)
				}
				continue
			}
			switch {
			case got.D != 0 && (got.D < time.Millisecond || got.D > time.Hour):
				t.Errorf("duration(%q) = %v, outside its bounds", v, got.D)
			case got.N < lo || got.N > hi:
				t.Errorf("int64(%q) = %d, outside its bounds", v, got.N)
			case got.B < 0 || got.B > hi:
				t.Errorf("bytes(%q) = %d, outside its bounds", v, got.B)
			}
			if name == "dnsname" {
				for _, l := range strings.Split(got.Name, ".") {
					if got.Name != "" && !ValidLabel(l) {
						t.Errorf("dnsname(%q) = %q, label %q is not a DNS label", v, got.Name, l)
					}
				}
			}
		}
		table := []Setting[fuzzed]{{Flag: "n", Env: "N", Default: "1", Apply: parsers["int64"]}}
		err := Load("fuzz", table, nil, func(string) string { return v }, &got)
		if err == nil {
			return
		}
		fes := fielderr.Errors(err)
		if len(fes) != 1 || fes[0].Key != "N" || fes[0].Rule == "" || !strings.HasPrefix(fes[0].Fix, "fix: ") {
			t.Errorf("Load(N=%q): %v; want one fielderr.Error for N with a rule and a fix", v, err)
		}
	})
}
