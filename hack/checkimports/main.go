// Command checkimports enforces Ebb's import rules (see STYLE: "the shape"):
//
//   - the pure tier imports only the standard library (minus networking) and
//     other pure packages;
//   - the queue-proxy binary's dependency tree has no k8s.io/* module;
//   - adapters (autoscaler, activator, queueproxy, platforms) do not import
//     each other: interfaces are declared by their users and wired in cmd/.
//     A platform may import the packages whose interfaces it implements
//     (autoscaler, activator) for their types; never the reverse, and never
//     another platform.
//
// It shells out to `go list`, so it sees exactly what the build sees.
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

// pure packages: standard library and each other only. Sub-packages of a
// pure package are pure too, except pkg/decider/hpa: it is the importable
// HPA contract on Kubernetes' types (k8s.io/api pulls in networking and
// klog), so only edges (cmd/) may import it. Its algorithm lives in the pure
// pkg/decider/behavior.
var pure = []string{"pkg/config", "pkg/window", "pkg/decider", "pkg/decider/behavior", "pkg/scenario", "pkg/stats", "pkg/breaker"}

// adapters must not import one another.
var adapters = []string{"pkg/autoscaler", "pkg/activator", "pkg/queueproxy", "pkg/platform/local", "pkg/platform/kubernetes"}

// banned in the pure tier even though they are in the standard library.
var bannedStd = []string{"net", "net/http", "os/exec", "syscall"}

func main() {
	var problems []string
	for _, p := range pure {
		problems = append(problems, checkPure(p)...)
	}
	problems = append(problems, checkNoK8s("cmd/queueproxy")...)
	for _, a := range adapters {
		problems = append(problems, checkAdapter(a)...)
	}
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
	cmd := exec.Command("go", append(append([]string{"list"}, args...), "./"+rel)...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		if strings.Contains(stderr.String(), "no Go files") {
			return nil
		}
		fmt.Fprintf(os.Stderr, "check-imports: go list %s: %v\n%s", rel, err, stderr.String())
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

func checkPure(rel string) []string {
	var problems []string
	for _, dep := range list(rel, "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}") {
		ok := false
		for _, p := range pure {
			if dep == module+"/"+p || strings.HasPrefix(dep, module+"/"+p+"/") && !strings.HasPrefix(dep, module+"/pkg/decider/hpa") {
				ok = true
			}
		}
		if !ok && !isStd(dep) {
			problems = append(problems, fmt.Sprintf("pure package %s depends on %s: the pure tier imports only the standard library and other pure packages; move the I/O to an adapter or cmd/", rel, dep))
		}
	}
	for _, imp := range list(rel, "-f", `{{join .Imports "\n"}}`) {
		for _, b := range bannedStd {
			if imp == b {
				problems = append(problems, fmt.Sprintf("pure package %s imports %s: the pure tier performs no I/O; take the data as an argument instead", rel, imp))
			}
		}
	}
	return problems
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

// mayImplement lists, for a platform, the adapters whose interfaces it
// implements and so may import.
var mayImplement = map[string][]string{
	"pkg/platform/local":      {"pkg/autoscaler", "pkg/activator"},
	"pkg/platform/kubernetes": {"pkg/autoscaler", "pkg/activator"},
}

func checkAdapter(rel string) []string {
	var problems []string
	for _, dep := range list(rel, "-deps", "-f", "{{.ImportPath}}") {
		for _, other := range adapters {
			if other == rel || slices.Contains(mayImplement[rel], other) {
				continue
			}
			if dep == module+"/"+other || strings.HasPrefix(dep, module+"/"+other+"/") {
				problems = append(problems, fmt.Sprintf("adapter %s imports adapter %s: declare the interface in the package that uses it and wire them in cmd/", rel, other))
			}
		}
	}
	return problems
}
