// Command testreport reads `go test -json` on stdin and prints what `go
// test` prints without -v (the ok/FAIL line of each package, the output of
// each failed test, build errors), plus one line for each skipped test
// with its reason, which plain `go test` hides: a test that needs what
// this machine lacks (Chromium) says so in `make test`. It exits 1 when a
// test or a build failed, or when no package reported at all.
//
//	go test -json ./... | go run ./hack/testreport
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string // build-output events
}

func main() {
	failed, err := report(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(1)
	}
	if failed {
		os.Exit(1)
	}
}

// report copies the summary of the events in r to w, and says whether
// anything failed (or nothing ran).
func report(r io.Reader, w io.Writer) (failed bool, err error) {
	outputs := map[string][]string{} // package + " " + test -> its output so far
	packages := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Fprintln(w, sc.Text()) // not an event: go test's own error
			failed = true
			continue
		}
		key := e.Package + " " + e.Test
		switch {
		case e.Action == "build-output":
			fmt.Fprint(w, e.Output)
		case e.Action == "build-fail":
			failed = true
		case e.Action == "output" && e.Test == "":
			if strings.HasPrefix(e.Output, "FAIL\t") {
				unfinished(w, outputs, e.Package)
			}
			if e.Output != "PASS\n" && !strings.HasPrefix(e.Output, "=== ") {
				fmt.Fprint(w, e.Output)
			}
		case e.Action == "output":
			outputs[key] = append(outputs[key], e.Output)
		case e.Action == "fail" && e.Test != "":
			fmt.Fprint(w, strings.Join(outputs[key], ""))
			delete(outputs, key)
		case e.Action == "skip" && e.Test != "":
			fmt.Fprintf(w, "SKIP %s %s: %s\n", e.Package, e.Test, skipReason(outputs[key]))
			delete(outputs, key)
		case e.Action == "pass" && e.Test != "":
			delete(outputs, key)
		case e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
			packages++
			failed = failed || e.Action == "fail"
			if e.Action == "fail" {
				unfinished(w, outputs, e.Package)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return true, err
	}
	return failed || packages == 0, nil
}

// unfinished prints, and forgets, the output of the tests of pkg that
// never ended: a package that panics or times out (the -timeout dump names
// the tests still running) leaves them without a pass or fail event, and
// their output is what says which test hung.
func unfinished(w io.Writer, outputs map[string][]string, pkg string) {
	var keys []string
	for k := range outputs {
		if strings.HasPrefix(k, pkg+" ") {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return
	}
	sort.Strings(keys)
	var names []string
	for _, k := range keys {
		fmt.Fprint(w, strings.Join(outputs[k], ""))
		delete(outputs, k)
		names = append(names, strings.TrimPrefix(k, pkg+" "))
	}
	fmt.Fprintf(w, "UNFINISHED %s: %s (their output is above)\n", pkg, strings.Join(names, ", "))
}

// skipReason is what a skipped test logged, on one line.
func skipReason(lines []string) string {
	var parts []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- SKIP") {
			continue
		}
		parts = append(parts, l)
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	return strings.Join(parts, "; ")
}
