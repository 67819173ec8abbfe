package activator

import (
	"errors"
	"math"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/proxy/reqmetrics"
)

// result is how a request ended, a label of the requests counter.
type result int

const (
	resultProxied result = iota
	resultUpgraded
	resultNoRevision
	resultBadRequest
	resultQueueFull
	resultQueueTimeout
	resultGone
	resultShutdown
	resultUpstreamError
	resultUpstreamTimeout
	resultClientGone
	resultRevisionFailing
	numResults
)

var resultNames = [numResults]string{
	"proxied", "upgraded", "no_revision", "bad_request", "queue_full", "queue_timeout",
	"revision_gone", "shutdown", "upstream_error", "upstream_timeout", "client_gone",
	"revision_failing",
}

// metrics are the activator's Prometheus metrics. Counters are resolved
// once, so the request path does no label lookup.
type metrics struct {
	results     [numResults]prometheus.Counter
	retries     prometheus.Counter
	pokes       prometheus.Counter
	replicaDown prometheus.Counter
	// connectTimeouts: connects to a replica the ConnectTimeout cut short.
	connectTimeouts prometheus.Counter
	// notSent: answers of a replica's queue-proxy proving a request never
	// reached its app (the app refused the connection); the request went
	// to another replica or waited.
	notSent prometheus.Counter
	slow    [numStages]prometheus.Counter // by the stage most of a slow request's time went to
	probes  struct{ ready, notReady prometheus.Counter }
	revs    *revisionVecs
}

func newMetrics(reg prometheus.Registerer, a *Activator) (*metrics, error) {
	m := &metrics{revs: newRevisionVecs(a.opts.PodName)}
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ebb_activator_requests_total", Help: "Requests by how they ended.",
	}, []string{"result"})
	for i, name := range resultNames {
		m.results[i] = requests.WithLabelValues(name)
	}
	probes := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ebb_activator_probes_total", Help: "Probes of replicas that were not ready, by answer.",
	}, []string{"answer"})
	m.probes.ready, m.probes.notReady = probes.WithLabelValues("ready"), probes.WithLabelValues("not_ready")
	m.retries = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ebb_activator_retries_total", Help: "Requests sent again to another replica after a connection error.",
	})
	m.pokes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ebb_activator_pokes_total", Help: "Immediate reports sent for revisions with no replica.",
	})
	m.replicaDown = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ebb_activator_replica_down_total", Help: "Replicas taken out of rotation after a connection error.",
	})
	m.connectTimeouts = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ebb_activator_connect_timeouts_total", Help: "Connects to a replica cut short by the connect timeout (nothing was sent).",
	})
	m.notSent = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ebb_activator_not_sent_total",
		Help: "Requests a replica's queue-proxy proved never reached its app (the app refused the connection); each went to another replica or waited.",
	})
	slow := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ebb_activator_slow_requests_total",
		Help: "Requests that took at least the slow-request bound, by the stage most of their time went to.",
	}, []string{"stage"})
	for i, name := range stageNames {
		m.slow[i] = slow.WithLabelValues(name)
	}
	if reg == nil {
		return m, nil
	}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	cs := append(m.revs.collectors(), requests, probes, m.retries, m.pokes, m.replicaDown, m.connectTimeouts, m.notSent, slow,
		gauge("ebb_activator_queued_requests", "Requests waiting for a replica.", func() float64 { return float64(a.global.count.Load()) }),
		gauge("ebb_activator_queued_bytes", "Bytes held by requests waiting for a replica.", func() float64 { return float64(a.global.bytes.Load()) }),
		gauge("ebb_activator_open_requests", "Requests admitted and not finished.", func() float64 { return float64(a.open.Load()) }),
		gauge("ebb_activator_open_tunnels", "Upgrade tunnels (websockets) open.", func() float64 { return float64(a.tunnels.count.Load()) }),
		gauge("ebb_activator_revisions", "Revisions in the routing table.", func() float64 { return float64(len(a.routes.Load().byKey)) }),
		gauge("ebb_activator_cached_clients", "Per-replica HTTP clients in the cache.", func() float64 { return float64(a.clients.len()) }),
		heldCollector{a: a}, newConcurrencyCollector(a),
		reqmetrics.Discarded("ebb_activator_upstream_conns_discarded_total", &a.checks, nil),
	)
	var errs []error
	for _, c := range cs {
		errs = append(errs, reg.Register(c))
	}
	return m, errors.Join(errs...)
}

// heldDesc is the per-revision gauge of held requests, read from the
// routing table at scrape time (nothing on the request path).
var heldDesc = prometheus.NewDesc("ebb_activator_revision_queued_requests",
	"Requests of a revision waiting for a replica.", revLabels, nil)

type heldCollector struct{ a *Activator }

func (c heldCollector) Describe(ch chan<- *prometheus.Desc) { ch <- heldDesc }

func (c heldCollector) Collect(ch chan<- prometheus.Metric) {
	for key, rev := range c.a.routes.Load().byKey {
		ns, name, _ := strings.Cut(key, "/")
		ch <- prometheus.MustNewConstMetric(heldDesc, prometheus.GaugeValue, float64(rev.throttle.waiting.Load()), ns, name)
	}
}

// concurrencyCollector is Knative's activator_request_concurrency: a
// revision's requests in flight through this activator, averaged over the
// last report period (what the activator reported to the autoscaler).
type concurrencyCollector struct {
	a    *Activator
	desc *prometheus.Desc
}

func newConcurrencyCollector(a *Activator) concurrencyCollector {
	return concurrencyCollector{a: a, desc: prometheus.NewDesc("activator_request_concurrency",
		"Requests of a revision in flight through the activator, averaged over the last report period (Knative's).",
		config.KnativeLabelNames, prometheus.Labels{"pod_name": a.opts.PodName, "container_name": knContainer})}
}

func (c concurrencyCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c concurrencyCollector) Collect(ch chan<- prometheus.Metric) {
	for _, rev := range c.a.routes.Load().byKey {
		v := math.Float64frombits(rev.m.concurrency.Load())
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, v, rev.m.names.Labels()...)
	}
}
