package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// explainGolden are the scenarios whose --explain output is golden too: the
// reasons (Kubernetes' ScaleUpLimit, ScaleDownStabilized, ... and the HPA
// class's per-metric reasons) are what they show.
var explainGolden = []string{"hpa-concurrency-default", "hpa-policies", "hpa-unready-missing", "hpa-metrics", "kpa-behavior", "park-wake-expire",
	"learned-park-wake-expire"}

func TestGoldenExplainScenarios(t *testing.T) {
	for _, name := range explainGolden {
		t.Run(name, func(t *testing.T) {
			checkGolden(t, filepath.Join(scenarioDir, name+".explain.golden.jsonl"), "TestGoldenExplainScenarios",
				"simulate", "--explain", filepath.Join(scenarioDir, name+".json"))
		})
	}
}

// TestDeployExampleScenarios: every scenario under deploy/examples replays.
func TestDeployExampleScenarios(t *testing.T) {
	files, _ := filepath.Glob("../../deploy/examples/*.json")
	yamls, _ := filepath.Glob("../../deploy/examples/*.yaml")
	for _, f := range append(files, yamls...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "kind: Deployment") {
			continue // a manifest, checked by TestValidateGolden
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run([]string{"simulate", f}, nil, &out, &errOut); code != 0 || out.Len() == 0 {
				t.Errorf("simulate %s exited %d: %s", f, code, errOut.String())
			}
		})
	}
}

func TestSimulateBehaviorErrors(t *testing.T) {
	tests := []struct {
		name    string
		stdin   string
		wantErr []string
	}{
		{"invalid behavior, with the config's errors", `{"annotations": {"autoscaling.knative.dev/min-scale": "-1",
			"autoscaling.ebb.dev/behavior": "{\"scaleUp\": {\"policies\": [{\"type\": \"pods\", \"value\": 1, \"periodSeconds\": 1}]}}"}, "samples": [{"t": 0}]}`,
			[]string{"autoscaling.knative.dev/min-scale", `scaleUp.policies[0].type = "pods": supported values: Pods, Percent`}},
		{"metrics on the KPA class", `{"annotations": {"autoscaling.ebb.dev/metrics": "[{\"metric\": \"rps\", \"target\": 1}]"}, "samples": [{"t": 0}]}`,
			[]string{"applies to the HPA class only"}},
		{"a pod sample problem", `{"samples": [{"t": 0, "pods": [{"name": "a", "phase": "Gone"}]}]}`,
			[]string{`samples[0].pods[0].phase = "Gone"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run([]string{"simulate", "-"}, strings.NewReader(tc.stdin), &out, &errOut); code != 1 {
				t.Errorf("exit %d, want 1 (stderr: %s)", code, errOut.String())
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(errOut.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut.String())
				}
			}
		})
	}
}
