// Package reqmetrics counts finished requests by response code, under
// Knative's request metrics' shape: a counter and a latency histogram in
// milliseconds, labelled response_code and response_code_class (the
// activator's activator_request_count and activator_request_latencies,
// the queue-proxy's revision_request_count, revision_request_latencies and
// their revision_app_ twins).
//
// A request's path must not allocate: a label lookup formats the code and
// hashes the labels. ByCode keeps the series of the first few codes it
// meets, resolved once, and finds them again with a scan of a few atomic
// pointers; only a code beyond them pays the lookup.
package reqmetrics

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// LatencyBuckets are the latency histogram's bounds in milliseconds:
// Knative's request latency buckets, 5 ms to 100 s.
var LatencyBuckets = []float64{5, 10, 20, 40, 60, 80, 100, 150, 200, 250, 300, 350, 400, 450, 500, 600, 700, 800, 900,
	1000, 2000, 5000, 10000, 20000, 50000, 100000}

// CodeLabels are the two variable labels of the request metrics, last in
// their vectors' label lists.
var CodeLabels = []string{"response_code", "response_code_class"}

// cached is how many codes a ByCode keeps resolved: 200, 503 and 504 and
// a few more; a revision rarely sees more.
const cached = 8

// ByCode is one source's request series (a revision's, curried): safe
// for concurrent use. The zero value is not usable; use New.
type ByCode struct {
	count   *prometheus.CounterVec
	latency prometheus.ObserverVec

	slots [cached]atomic.Pointer[series]
	mu    sync.Mutex // taken only to fill a slot
}

type series struct {
	code    int
	count   prometheus.Counter
	latency prometheus.Observer
}

// New returns the series of count and latency, whose last labels are
// CodeLabels (curried already for the others).
func New(count *prometheus.CounterVec, latency prometheus.ObserverVec) *ByCode {
	return &ByCode{count: count, latency: latency}
}

// Observe counts one request answered with code after ms milliseconds.
func (b *ByCode) Observe(code int, ms float64) {
	for i := range b.slots {
		s := b.slots[i].Load()
		if s == nil {
			break
		}
		if s.code == code {
			s.count.Inc()
			s.latency.Observe(ms)
			return
		}
	}
	s := b.resolve(code)
	s.count.Inc()
	s.latency.Observe(ms)
}

// resolve finds or makes a code's series, keeping it when a slot is free.
func (b *ByCode) resolve(code int) *series {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range b.slots {
		s := b.slots[i].Load()
		if s == nil {
			s = b.make(code)
			b.slots[i].Store(s)
			return s
		}
		if s.code == code {
			return s
		}
	}
	return b.make(code)
}

func (b *ByCode) make(code int) *series {
	c, class := strconv.Itoa(code), class(code)
	return &series{code: code, count: b.count.WithLabelValues(c, class), latency: b.latency.WithLabelValues(c, class)}
}

// class is a code's response_code_class: "2xx" for 200 to 299, ...; a
// code outside 100 to 599 (a client that went away: 499 is within) is
// "other".
func class(code int) string {
	if code < 100 || code > 599 {
		return "other"
	}
	return classes[code/100-1]
}

var classes = [...]string{"1xx", "2xx", "3xx", "4xx", "5xx"}

// IsKnative reports whether a metric has one of Knative's names (its
// autoscaler's, activator's and queue-proxy's), which keep Knative's
// spelling where Prometheus' lint would want another (a counter without
// _total, a latency in milliseconds): tests lint every other metric.
func IsKnative(metric string) bool {
	for _, p := range [...]string{"autoscaler_", "activator_", "revision_"} {
		if strings.HasPrefix(metric, p) {
			return true
		}
	}
	return false
}
