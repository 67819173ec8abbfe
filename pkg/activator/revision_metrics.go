package activator

import (
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/proxy/reqmetrics"
)

// revisionVecs are the per-revision metric families. Their only labels are
// the revision's namespace and name (and a result from a fixed list), so
// cardinality is bounded by the routing table; a retired revision's series
// are deleted.
type revisionVecs struct {
	requests    *prometheus.CounterVec
	queueWait   *prometheus.HistogramVec
	coldStarts  *prometheus.CounterVec
	coldLatency *prometheus.HistogramVec
	coldOverApp *prometheus.HistogramVec

	// Knative's activator series (docs/dashboard.md): labelled with the
	// revision's Knative names (config.KnativeLabelNames) and this
	// activator's pod_name and container_name.
	knCount   *prometheus.CounterVec
	knLatency *prometheus.HistogramVec
}

// knContainer is the activator's container_name in Knative's series.
const knContainer = "activator"

var revLabels = []string{"namespace", "revision"}

func newRevisionVecs(pod string) *revisionVecs {
	waitBuckets := prometheus.ExponentialBuckets(0.001, 2, 16) // 1ms .. 33s
	knLabels := append(slices.Clone(config.KnativeLabelNames), reqmetrics.CodeLabels...)
	own := prometheus.Labels{"pod_name": pod, "container_name": knContainer}
	return &revisionVecs{
		knCount: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "activator_request_count", ConstLabels: own,
			Help: "Requests of a revision that went through the activator, by response code (Knative's)."}, knLabels),
		knLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "activator_request_latencies", ConstLabels: own,
			Help:    "Time in milliseconds from a request's arrival at the activator to the end of its response (Knative's).",
			Buckets: reqmetrics.LatencyBuckets}, knLabels),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ebb_activator_revision_requests_total",
			Help: "Requests of a revision by how they ended (proxied, queue_full = 503 bound, queue_timeout = 504, upstream_error = 502, ...)."},
			append(revLabels[:2:2], "result")),
		queueWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ebb_activator_queue_wait_seconds",
			Help: "Time requests waited for a replica (requests that found a free replica at once are not counted).", Buckets: waitBuckets}, revLabels),
		coldStarts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ebb_activator_cold_starts_total",
			Help: "Times a revision with no ready replica held requests until a replica answered."}, revLabels),
		coldLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ebb_activator_cold_start_seconds",
			Help: "From the first request held at zero to the first one sent to a replica.", Buckets: waitBuckets}, revLabels),
		coldOverApp: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ebb_activator_cold_start_over_ready_seconds",
			Help:    "Cold-start overhead: from the replica answering ready to the first held request sent to it.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)}, revLabels),
	}
}

func (v *revisionVecs) collectors() []prometheus.Collector {
	return []prometheus.Collector{v.requests, v.queueWait, v.coldStarts, v.coldLatency, v.coldOverApp, v.knCount, v.knLatency}
}

// revMetrics are one revision's series, resolved once when the revision
// appears, and its cold-start clock.
type revMetrics struct {
	results     [numResults]prometheus.Counter
	queueWait   prometheus.Observer
	coldStarts  prometheus.Counter
	coldLatency prometheus.Observer
	coldOverApp prometheus.Observer

	names       config.KnativeNames
	kn          *reqmetrics.ByCode // activator_request_count and _latencies
	concurrency atomic.Uint64      // float64 bits: the average requests in flight over the last report period

	coldSince atomic.Int64 // Unix ns of the first request held with no replica; 0 when warm
	readyAt   atomic.Int64 // Unix ns the first replica answered during a cold start
}

func (v *revisionVecs) forRevision(key string, names config.KnativeNames) *revMetrics {
	ns, name, _ := strings.Cut(key, "/")
	kn := prometheus.Labels{}
	for i, l := range names.Labels() {
		kn[config.KnativeLabelNames[i]] = l
	}
	m := &revMetrics{
		names:       names,
		kn:          reqmetrics.New(v.knCount.MustCurryWith(kn), v.knLatency.MustCurryWith(kn)),
		queueWait:   v.queueWait.WithLabelValues(ns, name),
		coldStarts:  v.coldStarts.WithLabelValues(ns, name),
		coldLatency: v.coldLatency.WithLabelValues(ns, name),
		coldOverApp: v.coldOverApp.WithLabelValues(ns, name),
	}
	for i, r := range resultNames {
		m.results[i] = v.requests.WithLabelValues(ns, name, r)
	}
	return m
}

func (v *revisionVecs) forget(key string) {
	ns, name, _ := strings.Cut(key, "/")
	match := prometheus.Labels{"namespace": ns, "revision": name}
	v.requests.DeletePartialMatch(match)
	v.queueWait.DeletePartialMatch(match)
	v.coldStarts.DeletePartialMatch(match)
	v.coldLatency.DeletePartialMatch(match)
	v.coldOverApp.DeletePartialMatch(match)
	kn := prometheus.Labels{"namespace_name": ns, "revision_name": name}
	v.knCount.DeletePartialMatch(kn)
	v.knLatency.DeletePartialMatch(kn)
}

// heldAtZero marks the start of a cold start (the first request held while
// the revision has no replica).
func (m *revMetrics) heldAtZero(now time.Time) { m.coldSince.CompareAndSwap(0, now.UnixNano()) }

// replicaReady notes when the first replica of a cold start answered.
func (m *revMetrics) replicaReady(now time.Time) {
	if m.coldSince.Load() != 0 {
		m.readyAt.CompareAndSwap(0, now.UnixNano())
	}
}

// dispatched ends a cold start when a held request gets its replica.
func (m *revMetrics) dispatched(now time.Time) {
	since := m.coldSince.Swap(0)
	if since == 0 {
		return
	}
	m.coldStarts.Inc()
	m.coldLatency.Observe(time.Duration(now.UnixNano() - since).Seconds())
	if ready := m.readyAt.Swap(0); ready != 0 {
		m.coldOverApp.Observe(time.Duration(max(now.UnixNano()-ready, 0)).Seconds())
	}
}
