package activator

import (
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"ebb.dev/ebb/pkg/proxy/reqmetrics"
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
		if !reqmetrics.IsKnative(p.Metric) {
			t.Errorf("metric %s: %s", p.Metric, p.Text)
		}
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

// TestKnativeRequestMetrics: Knative's activator series, labelled with the
// revision's Knative names (from its labels) and the activator's pod: each
// request counted by its response code (the replica's, or the activator's
// own), its latency in milliseconds, the concurrency of the last report.
func TestKnativeRequestMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	r := rev("web-00001", 0, Replica{Address: "r1:80"})
	r.Labels = map[string]string{"serving.knative.dev/service": "web"}
	h := newHarness(t, func(o *Options) { o.Metrics = reg }, r)
	b := h.backend("r1:80", true)
	b.handler = func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Path()) == "/teapot" {
			ctx.SetStatusCode(fasthttp.StatusTeapot)
		}
	}
	for range 3 {
		if code, _, _ := h.do("web-00001.default", nil); code != 200 {
			t.Fatalf("status %d, want 200", code)
		}
	}
	if code, _, _ := h.do("web-00001.default", func(req *fasthttp.Request) { req.URI().SetPath("/teapot") }); code != 418 {
		t.Fatalf("status %d, want 418", code)
	}
	h.a.report(time.Now())
	const labels = `configuration_name="web",container_name="activator",namespace_name="default",pod_name="activator-0"`
	const rev = `revision_name="web-00001",service_name="web"`
	want := `
# HELP activator_request_count Requests of a revision that went through the activator, by response code (Knative's).
# TYPE activator_request_count counter
activator_request_count{` + labels + `,response_code="200",response_code_class="2xx",` + rev + `} 3
activator_request_count{` + labels + `,response_code="418",response_code_class="4xx",` + rev + `} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "activator_request_count"); err != nil {
		t.Error(err)
	}
	for name, n := range map[string]int{"activator_request_latencies": 2, "activator_request_concurrency": 1} {
		if got, err := testutil.GatherAndCount(reg, name); err != nil || got != n {
			t.Errorf("%s: %d series, want %d (%v)", name, got, n, err)
		}
	}
	h.platform.set()
	h.eventually("revision removed", func() bool { return testutil.CollectAndCount(h.a.metrics.revs.knCount) == 0 })
}
