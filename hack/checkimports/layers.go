package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// The tree is the layers: a package's layer is read from its folder, so
// the rules and the tree cannot disagree. Bottom up:
//
//   - foundation: every package directly under pkg/ that is not one of the
//     folders below (fielderr, envconfig, behavior, config, stats,
//     podfailure). Pure; it imports other foundations only.
//   - core: pkg/scaling/..., the deterministic decision core (the decider,
//     its windows, the learned policy, replays, whatif). Pure; it imports
//     foundations and the core.
//   - library: pkg/proxy/... (the parts both proxies share) and
//     pkg/manifest/... (manifests read and rewritten). They import
//     foundations, the core and libraries, never a component.
//   - component: pkg/autoscaler, pkg/activator, pkg/queueproxy and each
//     platform (pkg/platform/NAME), each with its sub-packages. Components
//     do not import each other: an interface is declared by its user and
//     wired in cmd/. A platform may import pkg/autoscaler and
//     pkg/activator, whose interfaces it implements, and pkg/platform (what
//     the platforms share).
//   - test support: internal/... and any package named ...test (fakes and
//     checks for tests, as clustertest and injecttest): it may import what
//     its tests need.
//
// A few packages inside a component or library are pure parts (pureParts):
// they follow the foundations' rule wherever they sit, and a sub-package of
// a foundation is pure too unless only programs may import it
// (programsOnly).
const (
	layerFoundation = "foundation"
	layerCore       = "core"
	layerLibrary    = "library"
	layerComponent  = "component"
	layerProgram    = "program"
	layerTest       = "test support"
)

// folders are the top folders of pkg/ that are not foundations, with their
// layer. Everything else directly under pkg/ is a foundation.
var folders = map[string]string{
	"pkg/scaling":    layerCore,
	"pkg/proxy":      layerLibrary,
	"pkg/manifest":   layerLibrary,
	"pkg/autoscaler": layerComponent,
	"pkg/activator":  layerComponent,
	"pkg/queueproxy": layerComponent,
	"pkg/platform":   layerComponent,
}

// pureParts are pure packages that live beside their users, and the
// packages of the module they may import besides foundations.
var pureParts = map[string][]string{
	// bucket holds the fleet's pure rules of bucket ownership.
	"pkg/autoscaler/bucket": nil,
	// breaker is the queue-proxy's concurrency limit and queue.
	"pkg/proxy/breaker": nil,
	// fleetsim checks bucket's rules in a model of the fleet (tests only).
	"internal/fleetsim": {"pkg/autoscaler/bucket"},
}

// programsOnly are the packages that only programs (package main) may
// import, and why. pkg/config/hpa is the importable HPA contract on
// Kubernetes' types (k8s.io/api pulls in networking and klog); its
// algorithm lives in the pure pkg/behavior, and packages that
// need its annotation parser take a config.DocumentParser, which a
// program wires (hpa.DocumentParser{}).
var programsOnly = map[string]string{
	"pkg/config/hpa": "it is the HPA contract on Kubernetes' types; take a config.DocumentParser and let the program (cmd/) pass hpa.DocumentParser{}",
}

// banned in the pure tier even though they are in the standard library.
var bannedStd = []string{"net", "net/http", "os/exec", "syscall"}

// layerOf is the layer of the package at p (relative to the module).
func layerOf(p string) string {
	top, rest, _ := strings.Cut(p, "/")
	switch top {
	case "cmd", "hack", "bench":
		if strings.HasPrefix(rest, "internal") || strings.Contains(rest, "/internal") {
			return layerTest
		}
		return layerProgram
	case "internal", "test":
		return layerTest
	case "pkg":
	default:
		return layerProgram
	}
	if strings.HasSuffix(p, "test") {
		// a package of fakes and checks for tests (clustertest,
		// injecttest): it may import what its tests need.
		return layerTest
	}
	name, _, _ := strings.Cut(rest, "/")
	if l, ok := folders["pkg/"+name]; ok {
		return l
	}
	return layerFoundation
}

// component is the component p belongs to ("pkg/autoscaler",
// "pkg/platform/kubernetes"), or "" for a package outside the components.
func component(p string) string {
	if layerOf(p) != layerComponent {
		return ""
	}
	parts := strings.Split(p, "/")
	if parts[1] == "platform" && len(parts) > 2 {
		return strings.Join(parts[:3], "/")
	}
	return strings.Join(parts[:2], "/")
}

// isPure says whether p is in the pure tier, read from the tree.
func isPure(p string) bool {
	if _, ok := pureParts[p]; ok {
		return true
	}
	if _, ok := programsOnly[p]; ok {
		return false
	}
	l := layerOf(p)
	return l == layerFoundation || l == layerCore
}

// mayImportPure says whether pure package p may import pure package q:
// a foundation imports foundations (and pure parts none but theirs), the
// core imports foundations and the core.
func mayImportPure(p, q string) bool {
	if extra, ok := pureParts[p]; ok {
		return layerOf(q) == layerFoundation && !isPart(q) || slices.Contains(extra, q)
	}
	switch layerOf(p) {
	case layerFoundation:
		return layerOf(q) == layerFoundation && !isPart(q)
	case layerCore:
		return (layerOf(q) == layerFoundation || layerOf(q) == layerCore) && !isPart(q)
	}
	return false
}

func isPart(p string) bool { _, ok := pureParts[p]; return ok }

// pkgInfo is one package of the module as `go list` sees it (test files
// excluded). Import paths are full ("ebb.dev/ebb/pkg/config").
type pkgInfo struct {
	name    string   // the package clause: "main" for a program
	imports []string // direct imports
	deps    []string // every dependency, direct or not
	doc     string   // the package's doc comment (go list's .Doc)
}

// loadModule lists every package of the module, keyed by its path
// relative to the module ("pkg/config").
func loadModule() map[string]pkgInfo {
	mod := map[string]pkgInfo{}
	for _, line := range goList("-f", "{{.ImportPath}}\t{{.Name}}\t{{join .Imports \" \"}}\t{{join .Deps \" \"}}\t{{.Doc}}", "./...") {
		f := strings.Split(line, "\t")
		if len(f) != 5 {
			continue
		}
		mod[strings.TrimPrefix(f[0], module+"/")] = pkgInfo{name: f[1], imports: strings.Fields(f[2]), deps: strings.Fields(f[3]), doc: f[4]}
	}
	return mod
}

// inModule returns path relative to the module, and whether it is one of
// the module's packages.
func inModule(path string) (string, bool) {
	return strings.CutPrefix(path, module+"/")
}

// checkPure applies the pure tier's rules to every pure package of mod.
func checkPure(mod map[string]pkgInfo) []string {
	var problems []string
	for _, p := range sortedKeys(mod) {
		if !isPure(p) {
			continue
		}
		info := mod[p]
		for _, dep := range info.deps {
			rel, ours := inModule(dep)
			if ours && !isPure(rel) || !ours && !isStd(dep) {
				problems = append(problems, fmt.Sprintf("pure package %s depends on %s: the pure tier imports only the standard library and other pure packages; move the I/O to an adapter or cmd/", p, dep))
			}
		}
		for _, imp := range info.imports {
			if slices.Contains(bannedStd, imp) {
				problems = append(problems, fmt.Sprintf("pure package %s imports %s: the pure tier performs no I/O; take the data as an argument instead", p, imp))
			}
			rel, ours := inModule(imp)
			if ours && isPure(rel) && !mayImportPure(p, rel) {
				problems = append(problems, fmt.Sprintf("pure package %s (%s) imports %s (%s), which is not below it: keep the layers (hack/checkimports/layers.go says what each folder may import)",
					p, describe(p), rel, describe(rel)))
			}
		}
	}
	return problems
}

// describe names p's layer, or that it is a pure part.
func describe(p string) string {
	if isPart(p) {
		return "a pure part"
	}
	return layerOf(p)
}

// checkLayers: libraries import no component, and components do not
// import each other (a platform may import pkg/autoscaler and
// pkg/activator, whose interfaces it implements).
func checkLayers(mod map[string]pkgInfo) []string {
	var problems []string
	for _, p := range sortedKeys(mod) {
		l := layerOf(p)
		if l != layerLibrary && l != layerComponent {
			continue
		}
		for _, imp := range mod[p].imports {
			rel, ours := inModule(imp)
			if !ours || layerOf(rel) != layerComponent || isPart(rel) {
				continue
			}
			switch {
			case l == layerLibrary:
				problems = append(problems, fmt.Sprintf("library %s imports %s of component %s: a library serves components and knows none of them", p, rel, component(rel)))
			case component(p) == component(rel):
			case strings.HasPrefix(component(p), "pkg/platform") && (rel == "pkg/autoscaler" || rel == "pkg/activator" || rel == "pkg/platform"):
			default:
				problems = append(problems, fmt.Sprintf("component %s (%s) imports %s of component %s: declare the interface in the package that uses it and wire them in cmd/",
					p, component(p), rel, component(rel)))
			}
		}
	}
	return problems
}

// checkProgramsOnly: a programsOnly package is imported by programs only.
func checkProgramsOnly(mod map[string]pkgInfo) []string {
	var problems []string
	for _, p := range sortedKeys(mod) {
		info := mod[p]
		if info.name == "main" {
			continue
		}
		for _, imp := range info.imports {
			rel, ours := inModule(imp)
			if why, ok := programsOnly[rel]; ours && ok {
				problems = append(problems, fmt.Sprintf("package %s imports %s, which only programs (package main) may import: %s", p, rel, why))
			}
		}
	}
	return problems
}

func sortedKeys(mod map[string]pkgInfo) []string {
	keys := make([]string, 0, len(mod))
	for k := range mod {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
