package main

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// m builds a fake module: each package with its name and direct imports
// (short paths: "pkg/x" is the module's, anything else as written). Deps
// are the direct imports plus extra.
func m(pkgs map[string][]string, mains ...string) map[string]pkgInfo {
	full := func(p string) string {
		if strings.HasPrefix(p, "pkg/") || strings.HasPrefix(p, "cmd/") {
			return module + "/" + p
		}
		return p
	}
	mod := map[string]pkgInfo{}
	for p, imps := range pkgs {
		info := pkgInfo{name: "x"}
		for _, mn := range mains {
			if mn == p {
				info.name = "main"
			}
		}
		for _, i := range imps {
			info.imports = append(info.imports, full(i))
			info.deps = append(info.deps, full(i))
		}
		mod[p] = info
	}
	return mod
}

func TestCheckPure(t *testing.T) {
	tests := []struct {
		name string
		mod  map[string]pkgInfo
		want []string // a part of each problem, in order
	}{
		{"the layers as they are", m(map[string][]string{
			"pkg/fielderr": {"fmt"}, "pkg/behavior": {"pkg/fielderr", "time"}, "pkg/config": {"pkg/fielderr", "pkg/behavior"},
			"pkg/scaling/decider": {"pkg/config", "pkg/scaling/window"}, "pkg/scaling/scenario": {"pkg/scaling/decider", "pkg/config"},
			"pkg/autoscaler": {"pkg/scaling/decider", "go.uber.org/zap", "net/http"},
		}), nil},
		{"config importing the decider goes up a layer", m(map[string][]string{"pkg/config": {"pkg/scaling/decider"}}),
			[]string{"pure package pkg/config imports pkg/scaling/decider, which is not below it"}},
		{"a leaf importing config", m(map[string][]string{"pkg/behavior": {"pkg/config"}}),
			[]string{"pure package pkg/behavior imports pkg/config, which is not below it in the pure tier (it may import pkg/fielderr)"}},
		{"a third-party dependency", m(map[string][]string{"pkg/scaling/window": {"go.uber.org/zap"}}),
			[]string{"pure package pkg/scaling/window depends on go.uber.org/zap"}},
		{"an adapter dependency", m(map[string][]string{"pkg/stats": {"pkg/autoscaler"}}),
			[]string{"pure package pkg/stats depends on ebb.dev/ebb/pkg/autoscaler"}},
		{"networking", m(map[string][]string{"pkg/proxy/breaker": {"net"}}),
			[]string{"pure package pkg/proxy/breaker imports net"}},
		{"an unlisted package under a pure one", m(map[string][]string{"pkg/config/extra": nil, "pkg/config/hpa": nil}),
			[]string{"package pkg/config/extra lies under the pure pkg/config"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkProblems(t, checkPure(tc.mod), tc.want)
		})
	}
}

func TestCheckProgramsOnly(t *testing.T) {
	mod := m(map[string][]string{
		"cmd/autoscaler": {"pkg/config/hpa", "pkg/autoscaler"},
		"hack/demoplot":  {"pkg/config/hpa"},
		"pkg/autoscaler": {"pkg/config/hpa", "pkg/config"},
		"pkg/config":     {"pkg/fielderr"},
	}, "cmd/autoscaler", "hack/demoplot")
	checkProblems(t, checkProgramsOnly(mod), []string{"package pkg/autoscaler imports pkg/config/hpa, which only programs (package main) may import"})
}

func checkProblems(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("problems (-want +got):\n%s", cmp.Diff(want, got))
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("problem %d = %q, want it to contain %q", i, got[i], want[i])
		}
	}
}

// TestRepositoryFollowsTheRules runs the pure-tier and programs-only rules
// on the repository, so `go test ./...` guards them as well as
// `make check-imports`.
func TestRepositoryFollowsTheRules(t *testing.T) {
	t.Chdir("../..")
	if _, err := os.Stat("go.mod"); err != nil {
		t.Fatal(err)
	}
	mod := loadModule()
	if _, ok := mod["pkg/config"]; !ok {
		t.Fatalf("loadModule found no pkg/config among %d packages", len(mod))
	}
	for _, p := range append(checkPure(mod), checkProgramsOnly(mod)...) {
		t.Error(p)
	}
}
