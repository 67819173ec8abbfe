// Command checkimports enforces Ebb's import rules (a pure core, I/O at the
// edges):
//
//   - the pure tier imports only the standard library (minus networking) and
//     other pure packages, in layers: each pure package lists the pure
//     packages it may import (pure, below), so imports go one way
//     (config below decider, decider below scenario);
//   - pkg/config/hpa (the HPA contract on Kubernetes' types) is imported
//     only by programs (package main: cmd/, hack/, bench/); packages take a
//     config.DocumentParser instead;
//   - the queue-proxy binary's dependency tree has no k8s.io/* module;
//   - the activator binary's (default build) has no typed clientset or
//     informer factory: their init registers every API group, about 10 MiB
//     of resident memory at idle (it uses activatorsource's REST clients);
//   - adapters (autoscaler, activator, queueproxy, platforms) do not import
//     each other: interfaces are declared by their users and wired in cmd/.
//     A platform may import the packages whose interfaces it implements
//     (autoscaler, activator) for their types; never the reverse, and never
//     another platform. A platform's sub-packages are part of it.
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

// pure is the pure tier, in layers: each pure package with the pure
// packages it may import. Every non-standard dependency of a pure package
// is one of these, and a package under a pure one must be listed here (or
// in programsOnly), so a new package cannot slip out of the rules.
//
// The layers, bottom up: field (the one error type); envconfig (the
// binaries' env/flag tables, whose errors are fielderr.Errors); the leaves window,
// stats, breaker, bucket and decider/behavior (the HPA algorithm on plain mirror
// types: the standard library and field only); config; decider; scenario.
// config imports decider/behavior because a Revision carries the behavior
// its decider runs on (Revision.Behavior, the parser's interface
// config.DocumentParser); that is a leaf, so config still depends on
// nothing of the decider itself, and the import graph has no cycle.
var pure = map[string][]string{
	"pkg/fielderr":          nil,
	"pkg/envconfig":         {"pkg/fielderr"},
	"pkg/scaling/window":    nil,
	"pkg/stats":             nil,
	"pkg/proxy/breaker":     nil,
	"pkg/autoscaler/bucket": nil,
	// podfailure decides whether a revision's pods cannot start.
	"pkg/podfailure": nil,
	// fleetsim checks bucket's fleet rules in a model of the fleet.
	"internal/fleetsim": {"pkg/autoscaler/bucket"},
	"pkg/behavior":      {"pkg/fielderr"},
	"pkg/config":        {"pkg/fielderr", "pkg/behavior"},
	// learned is the learned scale-to-zero policy; the decider drives it.
	"pkg/scaling/learned":  {"pkg/fielderr", "pkg/config", "pkg/behavior"},
	"pkg/scaling/decider":  {"pkg/fielderr", "pkg/config", "pkg/behavior", "pkg/scaling/learned", "pkg/scaling/window", "pkg/stats"},
	"pkg/scaling/scenario": {"pkg/fielderr", "pkg/config", "pkg/scaling/decider", "pkg/behavior", "pkg/scaling/learned", "pkg/scaling/window"},
	// secondloop closes a revision's seconds for the live autoscaler and for
	// whatif alike.
	"pkg/scaling/secondloop": {"pkg/fielderr", "pkg/config", "pkg/scaling/decider", "pkg/behavior", "pkg/scaling/learned", "pkg/scaling/window", "pkg/stats"},
	// compare holds the predictors whatif compares the learned policy with.
	"pkg/scaling/whatif/compare": {"pkg/fielderr", "pkg/config", "pkg/scaling/decider", "pkg/behavior", "pkg/scaling/learned", "pkg/scaling/window", "pkg/stats"},
	// whatif drives the live decider, stepper and stats accounting on a
	// virtual clock; it sits above scenario (whose epoch it shares).
	"pkg/scaling/whatif": {"pkg/fielderr", "pkg/config", "pkg/scaling/decider", "pkg/behavior", "pkg/scaling/learned", "pkg/scaling/window", "pkg/stats",
		"pkg/scaling/scenario", "pkg/scaling/secondloop", "pkg/scaling/whatif/compare"},
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

// adapters must not import one another.
var adapters = []string{"pkg/autoscaler", "pkg/activator", "pkg/queueproxy", "pkg/platform/local", "pkg/platform/kubernetes",
	"pkg/platform/kubernetes/reconciler", "pkg/platform/kubernetes/leader", "pkg/platform/kubernetes/resourcemetrics",
	"pkg/platform/kubernetes/statsauth", "pkg/platform/kubernetes/learnedstore", "pkg/platform/kubernetes/activatorsource"}

// heavyK8s are the client-go packages whose init registers every API
// group; the activator must not link them (nor their sub-packages).
var heavyK8s = []string{"k8s.io/client-go/kubernetes", "k8s.io/client-go/informers"}

// banned in the pure tier even though they are in the standard library.
var bannedStd = []string{"net", "net/http", "os/exec", "syscall"}

func main() {
	mod := loadModule()
	problems := checkPure(mod)
	problems = append(problems, checkProgramsOnly(mod)...)
	problems = append(problems, checkNoK8s("cmd/queueproxy")...)
	problems = append(problems, checkLeanK8s("cmd/activator")...)
	for _, a := range adapters {
		problems = append(problems, checkAdapter(a)...)
	}
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

// mayImplement lists, for a platform, the adapters whose interfaces it
// implements and so may import.
var mayImplement = map[string][]string{
	"pkg/platform/local":                      {"pkg/autoscaler", "pkg/activator"},
	"pkg/platform/kubernetes":                 {"pkg/autoscaler", "pkg/activator"},
	"pkg/platform/kubernetes/reconciler":      {"pkg/autoscaler"},
	"pkg/platform/kubernetes/leader":          nil,
	"pkg/platform/kubernetes/resourcemetrics": {"pkg/autoscaler"},
	"pkg/platform/kubernetes/statsauth":       {"pkg/autoscaler"},
	"pkg/platform/kubernetes/learnedstore":    {"pkg/autoscaler"},
	"pkg/platform/kubernetes/activatorsource": {"pkg/activator"},
}

// sameFamily: one of a and b is the other or one of its sub-packages, or
// both are parts of one platform (pkg/platform/NAME/...).
func sameFamily(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/") || platformOf(a) != "" && platformOf(a) == platformOf(b)
}

// platformOf is pkg/platform/NAME for a package in it, else "".
func platformOf(p string) string {
	rest, ok := strings.CutPrefix(p, "pkg/platform/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return "pkg/platform/" + name
}

func checkAdapter(rel string) []string {
	var problems []string
	for _, dep := range list(rel, "-deps", "-f", "{{.ImportPath}}") {
		for _, other := range adapters {
			if sameFamily(other, rel) || slices.Contains(mayImplement[rel], other) {
				continue
			}
			if dep == module+"/"+other || strings.HasPrefix(dep, module+"/"+other+"/") {
				problems = append(problems, fmt.Sprintf("adapter %s imports adapter %s: declare the interface in the package that uses it and wire them in cmd/", rel, other))
			}
		}
	}
	return problems
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
