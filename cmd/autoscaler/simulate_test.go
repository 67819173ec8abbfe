package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/internal/golden"
)

const scenarioDir = "../../testdata/scenarios"

// TestGoldenScenarios replays every scenario under testdata/scenarios and
// compares the output with its .golden.jsonl (rewritten by -update and
// reviewed as a diff).
func TestGoldenScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(scenarioDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios in %s: %v", scenarioDir, err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			checkGolden(t, filepath.Join(scenarioDir, name+".golden.jsonl"), "TestGoldenScenarios", "simulate", file)
		})
	}
}

// checkGolden runs the command and compares its output with the golden
// file, or rewrites the file with -update.
func checkGolden(t *testing.T, goldenPath, testName string, args ...string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(args, nil, &out, &errOut); code != 0 {
		t.Fatalf("%v exited %d: %s", args, code, errOut.String())
	}
	golden.Check(t, goldenPath, out.Bytes())
}

// TestExplainAddsReasons checks that --explain keeps every plain field and
// adds the state and at least one reason to each line.
func TestExplainAddsReasons(t *testing.T) {
	file := filepath.Join(scenarioDir, "burst.json")
	var plain, explained, errOut bytes.Buffer
	if code := run([]string{"simulate", file}, nil, &plain, &errOut); code != 0 {
		t.Fatalf("simulate exited %d: %s", code, errOut.String())
	}
	if code := run([]string{"simulate", file, "--explain"}, nil, &explained, &errOut); code != 0 {
		t.Fatalf("simulate --explain exited %d: %s", code, errOut.String())
	}
	pl := strings.Split(strings.TrimSpace(plain.String()), "\n")
	ex := strings.Split(strings.TrimSpace(explained.String()), "\n")
	if len(pl) != len(ex) {
		t.Fatalf("%d plain lines, %d explained", len(pl), len(ex))
	}
	for i := range pl {
		var p, e map[string]any
		if err := json.Unmarshal([]byte(pl[i]), &p); err != nil {
			t.Fatalf("line %d is not JSON: %v", i, err)
		}
		if err := json.Unmarshal([]byte(ex[i]), &e); err != nil {
			t.Fatalf("explained line %d is not JSON: %v", i, err)
		}
		reasons, _ := e["reasons"].([]any)
		if len(reasons) == 0 || e["state"] == nil {
			t.Fatalf("explained line %d lacks state or reasons: %s", i, ex[i])
		}
		for k, v := range p {
			if !cmp.Equal(v, e[k]) {
				t.Errorf("line %d: %s = %v plain, %v explained", i, k, v, e[k])
			}
		}
	}
}

func TestSimulateSpecExample(t *testing.T) {
	// The example of the scenario format spec, from standard input.
	in := `{
  "config":      { "stable-window": "60s", "target-burst-capacity": "211" },
  "annotations": { "autoscaling.knative.dev/target": "10" },
  "containerConcurrency": 0,
  "samples": [
    { "t": 0, "concurrency": 10.0, "rps": 95.0, "ready": 1 },
    { "t": 1, "concurrency": 12.5, "rps": 101.0, "ready": 1 },
    { "t": 2, "ready": 2 },
    { "t": 3, "concurrency": 11.0, "rps": 99.0, "reachable": false }
  ]
}`
	var out, errOut bytes.Buffer
	if code := run([]string{"simulate", "-"}, strings.NewReader(in), &out, &errOut); code != 0 {
		t.Fatalf("simulate exited %d: %s", code, errOut.String())
	}
	// t=0: stable 10 over target 7 -> 2 pods, 2/1 >= 200%: panic; EBC
	// floor(1*10 - 211 - 10) = -211. t=2: the young windows average
	// (10+12.5)/2 = 11.25 -> 2 pods; EBC floor(2*10 - 211 - 11.25) = -203.
	want := `{"t": 0, "recommended": 2, "desired": 2, "panic": true, "ebc": -211, "activatorInPath": true}
{"t": 2, "recommended": 2, "desired": 2, "panic": true, "ebc": -203, "activatorInPath": true}
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestSimulateErrors(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		stdin    string
		wantCode int
		wantErr  []string
	}{
		{name: "no file", args: []string{"simulate"}, wantCode: 2, wantErr: []string{"usage"}},
		{name: "missing file", args: []string{"simulate", "/nonexistent.json"}, wantCode: 2, wantErr: []string{"reading scenario"}},
		{name: "not JSON or YAML", args: []string{"simulate", "-"}, stdin: "{[", wantCode: 1, wantErr: []string{"neither JSON nor YAML"}},
		{name: "every sample problem at once", args: []string{"simulate", "-"},
			stdin:    `{"samples": [{"t": 1}, {"t": 1}, {"t": 2.5}, {"t": 3, "concurrency": -1}]}`,
			wantCode: 1, wantErr: []string{"samples[1].t = 1", "samples[2].t = 2.5", "samples[3].concurrency = -1"}},
		{name: "invalid config", args: []string{"simulate", "-"},
			stdin:    `{"config": {"stable-window": "3s"}, "samples": [{"t": 0}]}`,
			wantCode: 1, wantErr: []string{"stable-window", "3s"}},
		{name: "invalid annotation", args: []string{"simulate", "-"},
			stdin:    `{"annotations": {"autoscaling.knative.dev/min-scale": "-1"}, "samples": [{"t": 0}]}`,
			wantCode: 1, wantErr: []string{"autoscaling.knative.dev/min-scale", "-1"}},
		{name: "unknown field", args: []string{"simulate", "-"},
			stdin: `{"sample": []}`, wantCode: 1, wantErr: []string{"unknown field"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(tc.args, strings.NewReader(tc.stdin), &out, &errOut)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d (stderr: %s)", code, tc.wantCode, errOut.String())
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(errOut.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut.String())
				}
			}
		})
	}
}

func TestSimulateYAML(t *testing.T) {
	in := "samples:\n  - {t: 0, concurrency: 10, ready: 1}\n  - {t: 2, concurrency: 10}\n"
	var out, errOut bytes.Buffer
	if code := run([]string{"simulate", "-"}, strings.NewReader(in), &out, &errOut); code != 0 {
		t.Fatalf("simulate exited %d: %s", code, errOut.String())
	}
	if got := strings.Count(out.String(), "\n"); got != 2 {
		t.Errorf("%d lines, want 2:\n%s", got, out.String())
	}
}

func TestSimulatePlot(t *testing.T) {
	out := filepath.Join(t.TempDir(), "burst.svg")
	var stdout, errOut bytes.Buffer
	if code := run([]string{"simulate", "--plot", out, filepath.Join(scenarioDir, "burst.json")}, nil, &stdout, &errOut); code != 0 {
		t.Fatalf("simulate --plot exited %d: %s", code, errOut.String())
	}
	data, err := os.ReadFile(out)
	if err != nil || !bytes.Contains(data, []byte("<svg")) {
		t.Fatalf("plot %s: %v, %d bytes", out, err, len(data))
	}
	if stdout.Len() == 0 {
		t.Error("--plot stopped the JSON lines")
	}
	if code := run([]string{"simulate", "--plot", "x.png", filepath.Join(scenarioDir, "burst.json")}, nil, &stdout,
		&errOut); code != 2 || !strings.Contains(errOut.String(), ".svg or .html") {
		t.Errorf("--plot x.png: exit %d, stderr %s", code, errOut.String())
	}
}

// simulate -f: a Knative Service's settings (its annotations and
// containerConcurrency) replace the scenario's, and a config-autoscaler
// ConfigMap replaces its config: the replay equals that of the scenario
// written with those settings.
func TestSimulateWithManifests(t *testing.T) {
	samples := `"samples": [{"t": 0, "concurrency": 30, "rps": 300, "ready": 1}, {"t": 1, "concurrency": 30}, {"t": 2, "concurrency": 30}]`
	dir := t.TempDir()
	svc := filepath.Join(dir, "svc.yaml")
	err := os.WriteFile(svc, []byte(`apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: hello}
spec:
  template:
    metadata:
      annotations: {autoscaling.knative.dev/target-utilization-percentage: "50", autoscaling.knative.dev/max-scale: "4"}
    spec:
      containerConcurrency: 5
      containers: [{image: hello}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: config-autoscaler, namespace: ebb-system}
data: {stable-window: "20s"}
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	simulate := func(stdin string, args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := run(append(append([]string{"simulate"}, args...), "-"), strings.NewReader(stdin), &out, &errOut); code != 0 {
			t.Fatalf("simulate %v exited %d: %s", args, code, errOut.String())
		}
		return out.String()
	}
	got := simulate(`{"annotations": {"autoscaling.knative.dev/target": "100"}, "containerConcurrency": 50, `+samples+`}`, "-f", svc)
	want := simulate(`{"config": {"stable-window": "20s"}, "containerConcurrency": 5, "annotations": ` +
		`{"autoscaling.knative.dev/target-utilization-percentage": "50", "autoscaling.knative.dev/max-scale": "4"}, ` + samples + `}`)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("simulate -f (-the scenario with the manifest's settings +simulate -f):\n%s", diff)
	}
	if !strings.Contains(got, `"desired": 4`) {
		t.Errorf("30 in flight at 5 x 50%% per pod and max-scale 4 should desire 4:\n%s", got)
	}

	// A Knative Service Ebb cannot run is refused with its field.
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: s}\nspec:\n"+
		"  template:\n    spec:\n      containers: [{image: a}, {image: b}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"simulate", "-f", bad, "-"}, strings.NewReader(`{`+samples+`}`), &out, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), "containers[1]") {
		t.Errorf("simulate -f with two containers: exit %d, stderr %q; want 1 naming containers[1]", code, errOut.String())
	}
}
