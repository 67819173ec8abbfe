package queueproxy

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/proxy/reqmetrics"
)

// TestMetricsExposition: the queue-proxy's exposition parses and follows
// Prometheus' naming conventions, with the queued and probe-state gauges.
func TestMetricsExposition(t *testing.T) {
	c, err := Load([]string{"--container-concurrency=2", "--serving-revision=default/hello"}, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	q, err := New(c, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	reg := q.proxy.metrics.reg
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if !reqmetrics.IsKnative(p.Metric) {
			t.Errorf("metric %s: %s", p.Metric, p.Text)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, mf := range mfs {
		seen[mf.GetName()] = true
	}
	for _, name := range []string{"ebb_queue_queued_requests", "ebb_queue_app_ready", "ebb_queue_draining", "ebb_queue_overload_rejections_total"} {
		if !seen[name] {
			t.Errorf("%s missing from the exposition", name)
		}
	}
}
