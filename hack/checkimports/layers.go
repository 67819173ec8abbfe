package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// pkgInfo is one package of the module as `go list` sees it (test files
// excluded). Import paths are full ("ebb.dev/ebb/pkg/config").
type pkgInfo struct {
	name    string   // the package clause: "main" for a program
	imports []string // direct imports
	deps    []string // every dependency, direct or not
}

// loadModule lists every package of the module, keyed by its path
// relative to the module ("pkg/config").
func loadModule() map[string]pkgInfo {
	mod := map[string]pkgInfo{}
	for _, line := range goList("-f", "{{.ImportPath}}\t{{.Name}}\t{{join .Imports \" \"}}\t{{join .Deps \" \"}}", "./...") {
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			continue
		}
		mod[strings.TrimPrefix(f[0], module+"/")] = pkgInfo{name: f[1], imports: strings.Fields(f[2]), deps: strings.Fields(f[3])}
	}
	return mod
}

// inModule returns path relative to the module, and whether it is one of
// the module's packages.
func inModule(path string) (string, bool) {
	return strings.CutPrefix(path, module+"/")
}

// checkPure applies the pure tier's rules to every package of mod that is
// pure or lies under a pure one.
func checkPure(mod map[string]pkgInfo) []string {
	var problems []string
	for _, p := range sortedKeys(mod) {
		allowed, isPure := pure[p]
		if !isPure {
			if under := pureParent(p); under != "" && programsOnly[p] == "" {
				problems = append(problems, fmt.Sprintf("package %s lies under the pure %s but is not in hack/checkimports' pure table: add it with the pure packages it may import", p, under))
			}
			continue
		}
		info := mod[p]
		for _, dep := range info.deps {
			rel, ours := inModule(dep)
			if _, ok := pure[rel]; !(ours && ok) && (ours || !isStd(dep)) {
				problems = append(problems, fmt.Sprintf("pure package %s depends on %s: the pure tier imports only the standard library and other pure packages; move the I/O to an adapter or cmd/", p, dep))
			}
		}
		for _, imp := range info.imports {
			if slices.Contains(bannedStd, imp) {
				problems = append(problems, fmt.Sprintf("pure package %s imports %s: the pure tier performs no I/O; take the data as an argument instead", p, imp))
			}
			rel, ours := inModule(imp)
			if _, ok := pure[rel]; ours && ok && !slices.Contains(allowed, rel) {
				problems = append(problems, fmt.Sprintf("pure package %s imports %s, which is not below it in the pure tier (it may import %s): keep the layers, or change hack/checkimports' pure table and say why",
					p, rel, orNone(allowed)))
			}
		}
	}
	return problems
}

// pureParent is the pure package p lies under, or "".
func pureParent(p string) string {
	for q := range pure {
		if strings.HasPrefix(p, q+"/") {
			return q
		}
	}
	return ""
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

func orNone(pkgs []string) string {
	if len(pkgs) == 0 {
		return "none"
	}
	return strings.Join(pkgs, ", ")
}
