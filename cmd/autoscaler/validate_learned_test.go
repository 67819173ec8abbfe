package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateExplainsLearnedPolicy: validate names the learned policy's
// key when set, explains what the policy will do with the revision's
// parameters, and refuses an unknown policy naming the key, the value and
// the choices.
func TestValidateExplainsLearnedPolicy(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", `apiVersion: v1
kind: ConfigMap
metadata: {name: config-autoscaler}
data:
  scale-to-zero-policy: learned
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: f}
spec:
  template:
    metadata:
      annotations:
        autoscaling.ebb.dev/cold-start-cost: "5m"
`)
	code, out, errOut := runValidateCapture([]string{"-f", good}, "")
	for _, want := range []string{"scale-to-zero-policy                     learned", "scale-to-zero policy      learned: after 5 idle gaps",
		"cold-start cost 300s", "gaps that followed gaps like the last one", "past 30s of idle time, only at the seconds of the minute",
		"starts it a tick plus the longest of its latest pod start-ups", "outlives autoscaler restarts and leader failovers"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("exit %d, stdout:\n%s\nstderr: %s\nwant %q", code, out, errOut, want)
		}
	}
	raw, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	fixed := write("fixed.yaml", strings.Replace(string(raw), `cold-start-cost: "5m"`, `prewarm-lead: "3s"`, 1))
	code, out, errOut = runValidateCapture([]string{"-f", fixed}, "")
	if want := "cold-start cost 180s for each"; code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "starts it 3s ahead") {
		t.Errorf("exit %d, stdout:\n%s\nstderr: %s\nwant %q and the lead of 3s", code, out, errOut, want)
	}
	bad := write("bad.yaml", `apiVersion: apps/v1
kind: Deployment
metadata: {name: f}
spec:
  template:
    metadata:
      annotations:
        autoscaling.ebb.dev/scale-to-zero-policy: "hybrid"
`)
	code, out, _ = runValidateCapture([]string{"-f", bad}, "")
	for _, want := range []string{"autoscaling.ebb.dev/scale-to-zero-policy", `"hybrid"`, "knative or learned"} {
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("exit %d, stdout:\n%s\nwant exit 1 and %q", code, out, want)
		}
	}
}
