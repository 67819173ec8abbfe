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
			[]string{"pure package pkg/config (foundation) imports pkg/scaling/decider (core), which is not below it"}},
		{"a pure part importing the core", m(map[string][]string{"pkg/autoscaler/bucket": {"pkg/scaling/window"}}),
			[]string{"pure package pkg/autoscaler/bucket (a pure part) imports pkg/scaling/window (core)"}},
		{"a third-party dependency", m(map[string][]string{"pkg/scaling/window": {"go.uber.org/zap"}}),
			[]string{"pure package pkg/scaling/window depends on go.uber.org/zap"}},
		{"an adapter dependency", m(map[string][]string{"pkg/stats": {"pkg/autoscaler"}}),
			[]string{"pure package pkg/stats depends on ebb.dev/ebb/pkg/autoscaler"}},
		{"networking", m(map[string][]string{"pkg/proxy/breaker": {"net"}}),
			[]string{"pure package pkg/proxy/breaker imports net"}},
		{"a new package under a foundation is pure", m(map[string][]string{"pkg/config/extra": {"go.uber.org/zap"}, "pkg/config/hpa": {"k8s.io/api"}}),
			[]string{"pure package pkg/config/extra depends on go.uber.org/zap"}},
		{"a new package under the core is pure", m(map[string][]string{"pkg/scaling/extra": {"net/http"}}),
			[]string{"pure package pkg/scaling/extra imports net/http"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkProblems(t, checkPure(tc.mod), tc.want)
		})
	}
}

func TestCheckLayers(t *testing.T) {
	tests := []struct {
		name string
		mod  map[string]pkgInfo
		want []string
	}{
		{"the components as they are", m(map[string][]string{
			"pkg/autoscaler": {"pkg/scaling/decider"}, "pkg/platform/kubernetes/reconciler": {"pkg/autoscaler", "pkg/autoscaler/bucket", "pkg/platform"},
			"pkg/platform/local": {"pkg/activator", "pkg/autoscaler"}, "pkg/queueproxy": {"pkg/proxy/proxycore"},
			"pkg/manifest/inject/injecttest": {"pkg/queueproxy"},
		}), nil},
		{"components importing each other", m(map[string][]string{
			"pkg/activator": {"pkg/autoscaler/fleetapi"}, "pkg/platform/local": {"pkg/platform/kubernetes/cluster"},
		}), []string{"component pkg/activator (pkg/activator) imports pkg/autoscaler/fleetapi of component pkg/autoscaler",
			"component pkg/platform/local (pkg/platform/local) imports pkg/platform/kubernetes/cluster of component pkg/platform/kubernetes"}},
		{"a library importing a component", m(map[string][]string{"pkg/proxy/h2c": {"pkg/queueproxy"}}),
			[]string{"library pkg/proxy/h2c imports pkg/queueproxy of component pkg/queueproxy"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkProblems(t, checkLayers(tc.mod), tc.want)
		})
	}
}

func TestLayerOf(t *testing.T) {
	for p, want := range map[string]string{
		"pkg/config": layerFoundation, "pkg/config/hpa": layerFoundation, "pkg/scaling/decider": layerCore,
		"pkg/proxy/h2c": layerLibrary, "pkg/manifest/convert": layerLibrary, "pkg/platform/kubernetes/leader": layerComponent,
		"pkg/autoscaler/bucket": layerComponent, "internal/testnet": layerTest, "pkg/platform/kubernetes/cluster/clustertest": layerTest,
		"cmd/autoscaler": layerProgram, "bench/internal/paired": layerTest, "hack/checkimports": layerProgram,
	} {
		if got := layerOf(p); got != want {
			t.Errorf("layerOf(%q) = %q, want %q", p, got, want)
		}
	}
}

func TestRole(t *testing.T) {
	for doc, want := range map[string]string{
		"Package x is the y of z: more.":              "the y of z",
		"Package x decides (a thing) and more.":       "decides",
		"Command a is Ebb's autoscaler.":              "Ebb's autoscaler",
		"Package leader decides who does what, with:": "decides who does what, with",
	} {
		if got := role(doc); got != want {
			t.Errorf("role(%q) = %q, want %q", doc, got, want)
		}
	}
}

// TestReadmeLayout: the README's Layout table is the one the tree gives
// (go run ./hack/checkimports -layout prints it).
func TestReadmeLayout(t *testing.T) {
	t.Chdir("../..")
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	got, err := readmeLayout(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	if want := layoutTable(loadModule()); got != want {
		t.Errorf("README.md's Layout table differs from the tree: paste the output of go run ./hack/checkimports -layout (-tree +README):\n%s", cmp.Diff(want, got))
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
	for _, p := range append(append(checkPure(mod), checkProgramsOnly(mod)...), checkLayers(mod)...) {
		t.Error(p)
	}
}
