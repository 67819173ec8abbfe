package reqmetrics

import (
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func newVecs(reg prometheus.Registerer) (*prometheus.CounterVec, *prometheus.HistogramVec) {
	count := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_request_count", Help: "Requests."},
		append([]string{"revision_name"}, CodeLabels...))
	lat := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "x_request_latencies", Help: "Latencies.", Buckets: []float64{10, 100}},
		append([]string{"revision_name"}, CodeLabels...))
	reg.MustRegister(count, lat)
	return count, lat
}

func TestByCode(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	count, lat := newVecs(reg)
	b := New(count.MustCurryWith(prometheus.Labels{"revision_name": "hello"}), lat.MustCurryWith(prometheus.Labels{"revision_name": "hello"}))
	// More codes than slots: the ones beyond are counted all the same.
	for code := 200; code < 200+cached+3; code++ {
		b.Observe(code, 5)
	}
	b.Observe(200, 50)
	b.Observe(0, 1)
	want := `
# HELP x_request_count Requests.
# TYPE x_request_count counter
x_request_count{response_code="0",response_code_class="other",revision_name="hello"} 1
`
	for code := 200; code < 200+cached+3; code++ {
		n := "1"
		if code == 200 {
			n = "2"
		}
		want += `x_request_count{response_code="` + itoa(code) + `",response_code_class="2xx",revision_name="hello"} ` + n + "\n"
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "x_request_count"); err != nil {
		t.Error(err)
	}
	if got := testutil.ToFloat64(count.WithLabelValues("hello", "200", "2xx")); got != 2 {
		t.Errorf("200s counted %v, want 2", got)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestClass(t *testing.T) {
	for code, want := range map[int]string{100: "1xx", 204: "2xx", 302: "3xx", 499: "4xx", 503: "5xx", 599: "5xx", 600: "other", 0: "other", 99: "other"} {
		if got := class(code); got != want {
			t.Errorf("Class(%d) = %q, want %q", code, got, want)
		}
	}
}

// An observation of a code already met allocates nothing.
func TestObserveAllocatesNothing(t *testing.T) {
	count, lat := newVecs(prometheus.NewRegistry())
	b := New(count.MustCurryWith(prometheus.Labels{"revision_name": "hello"}), lat.MustCurryWith(prometheus.Labels{"revision_name": "hello"}))
	b.Observe(200, 1)
	b.Observe(503, 1)
	if n := testing.AllocsPerRun(1000, func() { b.Observe(503, 3); b.Observe(200, 7) }); n != 0 {
		t.Errorf("%v allocations per observation, want 0", n)
	}
}

func BenchmarkObserve(b *testing.B) {
	count, lat := newVecs(prometheus.NewRegistry())
	bc := New(count.MustCurryWith(prometheus.Labels{"revision_name": "hello"}), lat.MustCurryWith(prometheus.Labels{"revision_name": "hello"}))
	b.ReportAllocs()
	for b.Loop() {
		bc.Observe(200, 12)
	}
}
