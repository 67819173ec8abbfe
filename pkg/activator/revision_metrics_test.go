package activator

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestRevisionMetrics: a cold start is counted per revision with its
// latency over the replica's readiness; every request's outcome and queue
// wait are counted per revision; the exposition follows Prometheus'
// conventions; a removed revision's series go away.
func TestRevisionMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	h := newHarness(t, func(o *Options) { o.Metrics = reg }, rev("hello", 0, Replica{Address: "r1:80"}))
	b := h.backend("r1:80", false)
	const n = 5
	codes := make(chan int, n)
	for range n {
		go func() { code, _, _ := h.do("hello.default", nil); codes <- code }()
	}
	h.eventually("requests queued", func() bool { return h.a.global.count.Load() == n })
	b.ready.Store(true)
	for range n {
		if code := <-codes; code != 200 {
			t.Fatalf("status %d, want 200", code)
		}
	}
	if code, _, _ := h.do("nope.default", nil); code != 404 {
		t.Fatalf("unknown revision: %d", code)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("metric %s: %s", p.Metric, p.Text)
	}
	want := `
# HELP ebb_activator_cold_starts_total Times a revision with no ready replica held requests until a replica answered.
# TYPE ebb_activator_cold_starts_total counter
ebb_activator_cold_starts_total{namespace="default",revision="hello"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ebb_activator_cold_starts_total"); err != nil {
		t.Error(err)
	}
	m := h.a.metrics.revs
	if got := testutil.ToFloat64(m.requests.WithLabelValues("default", "hello", "proxied")); got != n {
		t.Errorf("proxied requests of default/hello = %v, want %d", got, n)
	}
	for name, c := range map[string]prometheus.Collector{"queue wait": m.queueWait, "cold start": m.coldLatency, "over ready": m.coldOverApp} {
		if testutil.CollectAndCount(c) != 1 {
			t.Errorf("%s histogram: want one revision's series", name)
		}
	}
	h.platform.set()
	h.eventually("revision removed", func() bool { return testutil.CollectAndCount(m.requests) == 0 })
}
