// Package heytest runs the hey load generator for end-to-end tests. hey is
// a tool of this module (the `tool` directive in go.mod), so a machine with
// Go and git runs it: no OS package is needed.
package heytest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	path      string
	buildErr  error
)

// Path returns the path of the hey executable, built once per test binary
// by `go tool -n hey` (which keeps it in the build cache, so later runs do
// not recompile it). Call it from the test goroutine: it fails the test
// when hey cannot be built.
func Path(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		out, err := exec.Command("go", "tool", "-n", "hey").Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			buildErr = fmt.Errorf("building hey with `go tool -n hey`: %v\n%s", err, stderr)
			return
		}
		path = strings.TrimSpace(string(out))
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return path
}

// Result is what a hey run reports.
type Result struct {
	Codes  map[int]int // responses by status code
	Errors []string    // the lines of hey's "Error distribution"
	Total  int         // responses with a status code
	Output []byte      // hey's whole report
}

// Run runs hey (from Path) with args and parses its report. It takes no
// testing.T, so a test may run it in a goroutine and check the error and
// the result on its own goroutine.
func Run(ctx context.Context, hey string, args ...string) (Result, error) {
	out, err := exec.CommandContext(ctx, hey, args...).CombinedOutput()
	if err != nil {
		return Result{Output: out}, fmt.Errorf("hey %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return Parse(out), nil
}

var codeLine = regexp.MustCompile(`^\s*\[(\d+)\]\s+(\d+) responses`)

// Parse reads hey's text report: the status code distribution and the
// error distribution.
func Parse(out []byte) Result {
	res := Result{Codes: map[int]int{}, Output: out}
	inErrors := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if m := codeLine.FindStringSubmatch(line); m != nil {
			code, _ := strconv.Atoi(m[1])
			n, _ := strconv.Atoi(m[2])
			res.Codes[code] += n
			res.Total += n
		}
		if strings.HasPrefix(line, "Error distribution") {
			inErrors = true
			continue
		}
		if inErrors && strings.TrimSpace(line) != "" {
			res.Errors = append(res.Errors, strings.TrimSpace(line))
		}
	}
	return res
}
