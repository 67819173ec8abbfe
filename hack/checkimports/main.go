// Command checkimports enforces Ebb's import rules (a pure core, I/O at the
// edges):
//
//   - the layers are the folders (layers.go): foundations directly under
//     pkg/, the core under pkg/scaling, libraries under pkg/proxy and
//     pkg/manifest, components (autoscaler, activator, queueproxy, each
//     platform); the pure tier (foundations, the core and a few pure parts)
//     imports only the standard library (minus networking) and pure
//     packages below it;
//   - pkg/config/hpa (the HPA contract on Kubernetes' types) is imported
//     only by programs (package main: cmd/, hack/, bench/); packages take a
//     config.DocumentParser instead;
//   - the queue-proxy binary's dependency tree has no k8s.io/* module;
//   - the activator binary's (default build) has no typed clientset or
//     informer factory: their init registers every API group, about 10 MiB
//     of resident memory at idle (it uses activatorsource's REST clients);
//   - components (autoscaler, activator, queueproxy, platforms) do not
//     import each other: interfaces are declared by their users and wired in
//     cmd/. A platform may import the packages whose interfaces it
//     implements (autoscaler, activator) for their types; never the
//     reverse, and never another platform. Libraries import no component;
//   - with -layout, it prints the README's Layout table from the tree
//     (layout.go).
//
// It shells out to `go list`, so it sees exactly what the build sees
// (test files excluded: a test may import what it needs to check).
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

const module = "ebb.dev/ebb"

// heavyK8s are the client-go packages whose init registers every API
// group; the activator must not link them (nor their sub-packages).
var heavyK8s = []string{"k8s.io/client-go/kubernetes", "k8s.io/client-go/informers"}

func main() {
	mod := loadModule()
	if len(os.Args) == 2 && os.Args[1] == "-layout" {
		fmt.Print(layoutTable(mod))
		return
	}
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "usage: checkimports [-layout]: check the import rules, or print the README's Layout table")
		os.Exit(2)
	}
	problems := checkPure(mod)
	problems = append(problems, checkProgramsOnly(mod)...)
	problems = append(problems, checkNoK8s("cmd/queueproxy")...)
	problems = append(problems, checkLeanK8s("cmd/activator")...)
	problems = append(problems, checkLayers(mod)...)
	problems = append(problems, checkProxyCore("pkg/proxy/proxycore")...)
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "check-imports:", p)
		}
		os.Exit(1)
	}
	fmt.Println("check-imports: ok")
}

func exists(rel string) bool {
	st, err := os.Stat(rel)
	return err == nil && st.IsDir()
}

// list runs `go list` with the given flags on one package and returns one
// line per result; a missing package yields nothing.
func list(rel string, args ...string) []string {
	if !exists(rel) {
		return nil
	}
	return goList(append(args, "./"+rel)...)
}

// goList runs `go list` with args and returns its non-empty lines.
func goList(args ...string) []string {
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		if strings.Contains(stderr.String(), "no Go files") {
			return nil
		}
		fmt.Fprintf(os.Stderr, "check-imports: go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		os.Exit(2)
	}
	var lines []string
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func checkNoK8s(rel string) []string {
	var problems []string
	for _, dep := range list(rel, "-deps", "-f", "{{.ImportPath}}") {
		if strings.HasPrefix(dep, "k8s.io/") || strings.HasPrefix(dep, "sigs.k8s.io/") {
			problems = append(problems, fmt.Sprintf("%s depends on %s: the queue-proxy runs in every pod and must not pull in Kubernetes modules", rel, dep))
		}
	}
	return problems
}

// checkLeanK8s: the default build of rel links no heavyK8s package. One
// problem per heavy package, naming who imports it.
func checkLeanK8s(rel string) []string {
	importers := map[string][]string{} // heavy package -> the packages outside it that import it
	for _, line := range list(rel, "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`) {
		fields := strings.Fields(line)
		if heavyDep(fields[0]) != "" {
			continue
		}
		for _, imp := range fields[1:] {
			if h := heavyDep(imp); h != "" && !slices.Contains(importers[h], fields[0]) {
				importers[h] = append(importers[h], fields[0])
			}
		}
	}
	var problems []string
	for _, h := range heavyK8s {
		if by := importers[h]; len(by) > 0 {
			problems = append(problems, fmt.Sprintf("%s depends on %s (imported by %s): its init registers every API group, about 10 MiB resident at idle; the activator talks to Kubernetes through pkg/platform/kubernetes/activatorsource's REST clients",
				rel, h, strings.Join(by, ", ")))
		}
	}
	return problems
}

// heavyDep returns the heavyK8s package dep is or is under, or "".
func heavyDep(dep string) string {
	for _, h := range heavyK8s {
		if dep == h || strings.HasPrefix(dep, h+"/") {
			return h
		}
	}
	return ""
}

// checkProxyCore: the proxy core shared by the activator and the
// queue-proxy logs nothing and knows neither of them: no zap, no other Ebb
// package but the two mechanisms beneath it (its doc.go says why).
func checkProxyCore(rel string) []string {
	var problems []string
	for _, dep := range list(rel, "-deps", "-f", "{{.ImportPath}}") {
		if strings.HasPrefix(dep, "go.uber.org/zap") || strings.HasPrefix(dep, "ebb.dev/ebb/") && dep != "ebb.dev/ebb/"+rel &&
			dep != "ebb.dev/ebb/pkg/proxy/h2c" && dep != "ebb.dev/ebb/pkg/proxy/busypoll" {
			problems = append(problems, fmt.Sprintf("%s depends on %s: the proxy core imports only the standard library, fasthttp "+
				"pkg/proxy/h2c (HTTP/2 mechanics) and pkg/proxy/busypoll (socket waits); leave logging and policy to the proxies", rel, dep))
		}
	}
	return problems
}
