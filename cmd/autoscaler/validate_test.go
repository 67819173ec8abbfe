package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/internal/golden"
)

// runValidateCapture runs `autoscaler validate args` with stdin and returns
// its exit status, stdout and stderr.
func runValidateCapture(args []string, stdin string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := runValidate(args, streams{in: strings.NewReader(stdin), out: &out, err: &errOut})
	return code, out.String(), errOut.String()
}

const td = "testdata/validate/"

// TestValidateGolden runs validate on the manifests of testdata/validate
// in both output formats and compares exit status, stdout and stderr with
// testdata/validate/*.golden (rewritten by -update).
func TestValidateGolden(t *testing.T) {
	tests := []struct {
		name     string
		files    []string
		stdin    string
		wantExit int
	}{
		{name: "deploy-examples", files: []string{"../../deploy/config-autoscaler.yaml", "../../deploy/examples/hello.yaml"}, wantExit: 0},
		{name: "deploy-examples-hpa", files: []string{"../../deploy/config-autoscaler.yaml", "../../deploy/examples/hpa.yaml"}, wantExit: 0},
		{name: "hpa", files: []string{td + "hpa.yaml"}, wantExit: 0},
		{name: "hpa-invalid", files: []string{td + "hpa-invalid.yaml"}, wantExit: 1},
		{name: "hpa-resources", files: []string{td + "hpa-resources.yaml"}, wantExit: 1},
		{name: "knative-hpa-examples", files: []string{td + "knative-hpa-examples.yaml"}, wantExit: 0},
		{name: "knative", files: []string{td + "knative.yaml"}, wantExit: 0},
		{name: "knative-refused", files: []string{td + "knative-refused.yaml"}, wantExit: 1},
		{name: "spec-example", files: []string{td + "spec-example.yaml"}, wantExit: 0},
		{name: "multi", files: []string{td + "multi.yaml"}, wantExit: 0},
		{name: "legacy", files: []string{td + "legacy.yaml"}, wantExit: 0},
		{name: "list-json", files: []string{td + "list.json"}, wantExit: 0},
		{name: "invalid", files: []string{td + "invalid.yaml"}, wantExit: 1},
		{name: "limits", files: []string{td + "limits.yaml"}, wantExit: 1},
		{name: "two-configmaps", files: []string{td + "multi.yaml", td + "limits.yaml"}, wantExit: 1},
		{name: "stdin", files: []string{"-"}, stdin: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: piped}\n", wantExit: 0},
		{name: "unparseable", files: []string{td + "unparseable.yaml", td + "missing.yaml"}, wantExit: 2},
	}
	for _, tt := range tests {
		for _, format := range []string{"text", "json"} {
			t.Run(tt.name+"/"+format, func(t *testing.T) {
				args := []string{"--output", format}
				for _, f := range tt.files {
					args = append(args, "-f", f)
				}
				code, out, errOut := runValidateCapture(args, tt.stdin)
				if code != tt.wantExit {
					t.Errorf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantExit, out, errOut)
				}
				got := fmt.Sprintf("$ autoscaler validate %s\nexit status %d\n--- stdout\n%s--- stderr\n%s",
					strings.Join(args, " "), code, out, errOut)
				compareGolden(t, filepath.Join(td, tt.name+"."+format+".golden"), got)
				if format == "json" && code != 2 {
					var v map[string]any
					if err := json.Unmarshal([]byte(out), &v); err != nil {
						t.Errorf("stdout is not one JSON document: %v", err)
					}
				}
			})
		}
	}
}

func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	golden.Check(t, path, []byte(got))
}

// TestValidateSpecExample checks validate's JSON, a published form that
// other tools read, field by field: no ConfigMap, one revision without
// annotations.
func TestValidateSpecExample(t *testing.T) {
	const want = `{
  "configmap": {
    "valid": true,
    "errors": [],
    "effective": {
      "enable-scale-to-zero": true,
      "container-concurrency-target-fraction": 0.7,
      "container-concurrency-target-default": 100,
      "requests-per-second-target-default": 200,
      "target-burst-capacity": 211,
      "stable-window": 60,
      "panic-window-percentage": 10,
      "panic-threshold-percentage": 200,
      "max-scale-up-rate": 1000,
      "max-scale-down-rate": 2,
      "scale-to-zero-grace-period": 30,
      "scale-to-zero-pod-retention-period": 0,
      "scale-down-delay": 0,
      "activator-capacity": 100,
      "pod-autoscaler-class": "kpa.autoscaling.knative.dev",
      "initial-scale": 1,
      "allow-zero-initial-scale": false,
      "min-scale": 0,
      "max-scale": 0,
      "max-scale-limit": 0
    }
  },
  "revisions": [
    {
      "namespace": "default",
      "name": "hello",
      "valid": true,
      "errors": [],
      "effective": {
        "class": "kpa.autoscaling.knative.dev",
        "metric": "concurrency",
        "target": 70,
        "total": 100,
        "panicThreshold": 2,
        "targetBurstCapacity": 211,
        "stableWindowSeconds": 60,
        "panicWindowSeconds": 6,
        "scaleDownDelaySeconds": 0,
        "scaleToZeroPodRetentionSeconds": 0,
        "initialScale": 1,
        "activationScale": 0,
        "minScale": 0,
        "maxScale": 0,
        "maxScaleUpRate": 1000,
        "maxScaleDownRate": 2,
        "aggregation": "linear"
      }
    }
  ]
}
`
	code, out, errOut := runValidateCapture([]string{"--output", "json", "-f", td + "spec-example.yaml"}, "")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("JSON output (-want +got):\n%s", diff)
	}
}

func TestValidateInvalidJSONOmitsEffective(t *testing.T) {
	code, out, _ := runValidateCapture([]string{"-o", "json", "-f", td + "invalid.yaml"}, "")
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	var rep struct {
		ConfigMap struct {
			Valid     bool            `json:"valid"`
			Errors    []string        `json:"errors"`
			Effective json.RawMessage `json:"effective"`
		} `json:"configmap"`
		Revisions []struct {
			Name      string          `json:"name"`
			Valid     bool            `json:"valid"`
			Errors    []string        `json:"errors"`
			Effective json.RawMessage `json:"effective"`
		} `json:"revisions"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	got := []string{fmt.Sprintf("configmap valid=%v errors=%d effective=%v", rep.ConfigMap.Valid, len(rep.ConfigMap.Errors), rep.ConfigMap.Effective != nil)}
	for _, r := range rep.Revisions {
		got = append(got, fmt.Sprintf("%s valid=%v errors=%d effective=%v", r.Name, r.Valid, len(r.Errors), r.Effective != nil))
	}
	want := []string{
		"configmap valid=false errors=4 effective=false",
		"typos valid=false errors=6 effective=false",
		"fine valid=true errors=0 effective=true",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
}

func TestValidateFlags(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantExit   int
		wantStderr string // a substring
	}{
		{name: "no file", args: nil, wantExit: 2, wantStderr: "no manifest given"},
		{name: "bad output", args: []string{"--output", "csv", "-f", td + "legacy.yaml"}, wantExit: 2, wantStderr: `--output "csv": want text, json or yaml`},
		{name: "positional argument", args: []string{td + "legacy.yaml"}, wantExit: 2, wantStderr: "give files with -f FILE"},
		{name: "unknown flag", args: []string{"--strict"}, wantExit: 2, wantStderr: "flag provided but not defined: -strict"},
		{name: "stdin twice", args: []string{"-f", "-", "-f", "-"}, wantExit: 2, wantStderr: "-f - given twice"},
		{name: "help", args: []string{"-h"}, wantExit: 0, wantStderr: "usage: autoscaler validate"},
		{name: "equals syntax", args: []string{"-output=json", "-f=" + td + "legacy.yaml"}, wantExit: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runValidateCapture(tt.args, "")
			if code != tt.wantExit || !strings.Contains(errOut, tt.wantStderr) {
				t.Errorf("exit %d (want %d), stderr:\n%s\nwant it to contain %q", code, tt.wantExit, errOut, tt.wantStderr)
			}
		})
	}
}
