// Package prometheus holds what a Prometheus needs for Ebb: the recording
// rules of Knative's OpenTelemetry-era metric names
// (knative-otel-rules.yaml) and a scrape configuration (prometheus.yml).
// This test runs promtool's unit tests of the rules.
package prometheus

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// promtoolBin is Debian's prometheus package's promtool (.ci/run installs it).
const promtoolBin = "/usr/bin/promtool"

// TestKnativeOTelRules checks the rules file and evaluates it with
// promtool on Ebb's series: each recorded Knative name with Knative's
// labels, bucket bounds in seconds, and queries of Knative's dashboards.
func TestKnativeOTelRules(t *testing.T) {
	if _, err := os.Stat(promtoolBin); err != nil {
		t.Skip("promtool is not installed (Debian package prometheus): skipping the recording rules' unit test")
	}
	for _, args := range [][]string{
		{"check", "rules", "knative-otel-rules.yaml"},
		{"test", "rules", "knative-otel-rules.test.yaml"},
	} {
		out, err := exec.Command(promtoolBin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
	}
}
