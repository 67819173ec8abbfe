package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const whatifData = "../../pkg/scaling/whatif/testdata"

func whatifArgs(extra ...string) []string {
	return append([]string{"whatif", "--invocations", filepath.Join(whatifData, "invocations.csv"),
		"--durations", filepath.Join(whatifData, "durations.csv"), "--memory", filepath.Join(whatifData, "memory.csv")}, extra...)
}

// TestWhatifGolden: the command prints the package's golden lines (the
// same simulation, run on workers, so the same bytes whatever the
// workers' order; the package tests determinism on its own).
func TestWhatifGolden(t *testing.T) {
	want, err := os.ReadFile(filepath.Join(whatifData, "whatif.golden.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run(whatifArgs(), nil, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if diff := cmp.Diff(string(want), out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	if errOut.Len() != 0 {
		t.Errorf("stderr not a terminal, want it empty, got %q", errOut.String())
	}
}

func TestWhatifSelectAndText(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(whatifArgs("--function", "dfd4d5d8eb32c5bcdbdb163c282678fbc711fad4115566c44472a23b494d0693", "--output", "text"), nil, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "dfd4d5d8eb32") || !strings.Contains(lines[1], "69") ||
		!strings.HasPrefix(strings.TrimSpace(lines[2]), "*") {
		t.Errorf("text output: want a header, the function (69 cold starts) and the summary, got:\n%s", out.String())
	}
}

func TestWhatifErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: f}
spec:
  template:
    metadata:
      annotations:
        autoscaling.knative.dev/min-scale: "-1"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{name: "no trace", args: []string{"whatif"}, wantCode: 2, wantErr: "--invocations FILE and --durations FILE are required"},
		{name: "bad output", args: whatifArgs("--output", "csv"), wantCode: 2, wantErr: `--output "csv": want json, text, yaml`},
		{name: "unknown function", args: whatifArgs("--function", "nope"), wantCode: 2, wantErr: "--function nope: not in the invocations file"},
		{name: "invalid annotation", args: whatifArgs("-f", bad), wantCode: 1, wantErr: "min-scale"},
		{name: "bad arrivals", args: whatifArgs("--arrivals", "uniform"), wantCode: 2,
			wantErr: `--arrivals: "uniform" is not a spread of arrivals: want "even"`},
		{name: "seed without random arrivals", args: whatifArgs("--seed", "3"), wantCode: 2,
			wantErr: "--seed 3: only --arrivals random draws at random; add --arrivals random"},
		{name: "negative start cost", args: whatifArgs("--start-cost", "-1s"), wantCode: 2, wantErr: `--start-cost "-1s": want a duration of at least 0`},
		{name: "start cost not a duration", args: whatifArgs("--start-cost", "5"), wantCode: 2, wantErr: `--start-cost "5": want a duration`},
		{name: "missing file", args: whatifArgs("--durations", filepath.Join(dir, "none.csv")), wantCode: 2, wantErr: "reading durations"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(tt.args, nil, &out, &errOut)
			if code != tt.wantCode || !strings.Contains(errOut.String(), tt.wantErr) {
				t.Errorf("exit %d, stderr %q: want exit %d and %q", code, errOut.String(), tt.wantCode, tt.wantErr)
			}
		})
	}
}

// TestWhatifRandomArrivals: --arrivals random gives the same bytes for a
// seed, other numbers for another seed, and the same requests as the even
// spread; --start-cost prices each replica start in costReplicaSeconds.
func TestWhatifRandomArrivals(t *testing.T) {
	fn := []string{"--function", "dfd4d5d8eb32c5bcdbdb163c282678fbc711fad4115566c44472a23b494d0693"}
	lines := func(extra ...string) (string, map[string]any) {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := run(whatifArgs(append(fn, extra...)...), nil, &out, &errOut); code != 0 {
			t.Fatalf("%v: exit %d: %s", extra, code, errOut.String())
		}
		all := strings.Split(strings.TrimSpace(out.String()), "\n")
		var sum map[string]any
		if err := json.Unmarshal([]byte(all[len(all)-1]), &sum); err != nil {
			t.Fatal(err)
		}
		return out.String(), sum
	}
	a, sa := lines("--arrivals", "random", "--seed", "5")
	b, _ := lines("--arrivals", "random", "--seed", "5")
	c, sc := lines("--arrivals", "random", "--seed", "6")
	even, se := lines("--arrivals", "even", "--start-cost", "30s")
	if a != b {
		t.Errorf("seed 5 twice:\n%s\n%s", a, b)
	}
	if a == c || a == even {
		t.Errorf("seeds 5 and 6, or random and even, gave the same output:\n%s", a)
	}
	if sa["requests"] != se["requests"] || sc["requests"] != se["requests"] {
		t.Errorf("requests: %v (seed 5), %v (seed 6), %v (even); want the same", sa["requests"], sc["requests"], se["requests"])
	}
	// The default start cost is the cold start (1s); 30s for the even run.
	want := func(s map[string]any, perStart float64) float64 {
		return s["idleReplicaSeconds"].(float64) + s["replicaStarts"].(float64)*perStart
	}
	if got := sa["costReplicaSeconds"].(float64); math.Abs(got-want(sa, 1)) > 1e-6 {
		t.Errorf("seed 5: costReplicaSeconds %v, want idle + starts x 1s = %v", got, want(sa, 1))
	}
	if got := se["costReplicaSeconds"].(float64); math.Abs(got-want(se, 30)) > 1e-6 || se["replicaStarts"].(float64) < 1 {
		t.Errorf("even: costReplicaSeconds %v, replicaStarts %v; want idle + starts x 30s = %v", got, se["replicaStarts"], want(se, 30))
	}
}
