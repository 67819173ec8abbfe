package queueproxy

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/proxy/reqmetrics"
	"ebb.dev/ebb/pkg/stats"
)

// metrics are the Prometheus view of the queue-proxy, on the admin port's
// /metrics. Per-request updates are lock-free atomics on pre-resolved
// series (no label lookup on the hot path).
type metrics struct {
	reg *prometheus.Registry

	duration  [6]prometheus.Observer // by status class: [1..5], [0] anything else
	queueFull prometheus.Counter
	timeouts  prometheus.Counter
	// appRefused counts the requests no connection to the app could be
	// made for (answered 503, not sent: Proxy.appRefused).
	appRefused prometheus.Counter

	concurrency, proxiedConcurrency prometheus.Gauge
	requestRate, proxiedRequestRate prometheus.Gauge
	inFlight                        prometheus.Gauge
	requests, proxiedRequests       prometheus.Counter

	// Knative's queue-proxy series (docs/dashboard.md), labelled with the
	// revision's Knative names, the pod and container_name="queue-proxy":
	// every request (revision_request_*), and those the app answered
	// (revision_app_request_*, timed from leaving the breaker).
	knRequests, knApp *reqmetrics.ByCode
	knLabels          prometheus.Labels
}

// ebbLabels are the constant labels of Ebb's own series: the revision's
// namespace and name, as the autoscaler's and the activator's.
func ebbLabels(c Config) prometheus.Labels {
	labels := prometheus.Labels{}
	if c.Revision != "" {
		labels["namespace"], labels["revision"] = c.Names.Namespace, c.Names.Revision
	}
	return labels
}

// knContainer is the queue-proxy's container_name in Knative's series.
const knContainer = "queue-proxy"

// knativeLabels are the constant labels of Knative's series.
func knativeLabels(c Config) prometheus.Labels {
	l := prometheus.Labels{"pod_name": c.PodName, "container_name": knContainer}
	for i, v := range c.Names.Labels() {
		l[config.KnativeLabelNames[i]] = v
	}
	return l
}

const namespace = "ebb_queue"

func newMetrics(c Config) *metrics {
	reg := prometheus.NewRegistry()
	labels := ebbLabels(c)
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help, ConstLabels: labels})
	}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help, ConstLabels: labels})
	}
	m := &metrics{
		reg:       reg,
		queueFull: counter("overload_rejections_total", "Requests refused with 503 because the breaker's queue was full."),
		timeouts:  counter("timeouts_total", "Requests answered 504 by a timeout of the queue-proxy."),
		appRefused: counter("app_refused_total",
			"Requests answered 503 because no connection to the app could be made (refused or timed out): none of them reached it."),
		concurrency:        gauge("average_concurrent_requests", "Time-weighted average requests in flight (queued included) over the last report period."),
		proxiedConcurrency: gauge("average_proxied_concurrent_requests", "The part of average_concurrent_requests that came through the activator."),
		requestRate:        gauge("requests_per_second", "Requests received per second over the last report period."),
		proxiedRequestRate: gauge("proxied_requests_per_second", "The part of requests_per_second that came through the activator."),
		inFlight:           gauge("requests_in_flight", "Requests in flight when the last report was cut."),
		requests:           counter("requests_total", "Requests received (updated at each report)."),
		proxiedRequests:    counter("proxied_requests_total", "Requests received through the activator (updated at each report)."),
	}
	hist := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "request_duration_seconds", ConstLabels: labels,
		Help:    "Time from arrival at the queue-proxy to the last byte of the response, queueing included.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
	}, []string{"code_class"})
	for i, class := range []string{"other", "1xx", "2xx", "3xx", "4xx", "5xx"} {
		m.duration[i] = hist.WithLabelValues(class)
	}
	m.knLabels = knativeLabels(c)
	byCode := func(name, help string) (*reqmetrics.ByCode, []prometheus.Collector) {
		count := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name + "_count", ConstLabels: m.knLabels,
			Help: help + ", by response code (Knative's)."}, reqmetrics.CodeLabels)
		lat := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name + "_latencies", ConstLabels: m.knLabels,
			Help: help + ": time in milliseconds to the end of the response (Knative's).", Buckets: reqmetrics.LatencyBuckets}, reqmetrics.CodeLabels)
		return reqmetrics.New(count, lat), []prometheus.Collector{count, lat}
	}
	var all, app []prometheus.Collector
	m.knRequests, all = byCode("revision_request", "Requests received by the queue-proxy")
	m.knApp, app = byCode("revision_app_request", "Requests answered by the app")
	reg.MustRegister(append(all, app...)...)
	reg.MustRegister(hist, m.queueFull, m.timeouts, m.appRefused, m.concurrency, m.proxiedConcurrency, m.requestRate,
		m.proxiedRequestRate, m.inFlight, m.requests, m.proxiedRequests,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// observe records one finished request.
func (m *metrics) observe(status int, d time.Duration) {
	class := status / 100
	if class < 1 || class > 5 {
		class = 0
	}
	m.duration[class].Observe(d.Seconds())
}

// observeKnative records one finished request in Knative's series: begun
// at start, sent to the app at appStart, ended at now; app says the app
// answered it (not the queue-proxy).
func (m *metrics) observeKnative(status int, now, start, appStart time.Time, app bool) {
	m.knRequests.Observe(status, float64(now.Sub(start))/float64(time.Millisecond))
	if app {
		m.knApp.Observe(status, float64(now.Sub(appStart))/float64(time.Millisecond))
	}
}

// report publishes one report period's numbers.
func (m *metrics) report(s stats.Stat, inFlight int64) {
	m.concurrency.Set(s.AverageConcurrency)
	m.proxiedConcurrency.Set(s.AverageProxiedConcurrency)
	m.requestRate.Set(s.RequestRate())
	m.proxiedRequestRate.Set(s.ProxiedRequestRate())
	m.inFlight.Set(float64(inFlight))
	m.requests.Add(float64(s.RequestCount))
	m.proxiedRequests.Add(float64(s.ProxiedRequestCount))
}

// watch registers the gauges read at scrape time: requests waiting in the
// breaker (0 without one) and the probe state (1 while the app answers its
// readiness probe, 0 otherwise; draining shown apart).
func (m *metrics) watch(c Config, p *proxy, ready *readiness) {
	labels := ebbLabels(c)
	gaugeFunc := func(name, help string, f func() float64) prometheus.GaugeFunc {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help, ConstLabels: labels}, f)
	}
	m.reg.MustRegister(
		gaugeFunc("queued_requests", "Requests waiting in the breaker's queue for a slot (0 with containerConcurrency 0).", func() float64 {
			if p.breaker == nil {
				return 0
			}
			return float64(p.breaker.Waiting())
		}),
		gaugeFunc("app_ready", "1 while the app answers the readiness probe.", func() float64 { return boolValue(ready.app.Load()) }),
		gaugeFunc("draining", "1 once SIGTERM started the drain (readiness failed for good).", func() float64 { return boolValue(ready.Draining()) }),
		reqmetrics.Discarded(namespace+"_upstream_conns_discarded_total", &p.checks, labels),
	)
	if p.breaker != nil { // Knative reports no queue depth without a limit
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "revision_queue_depth", ConstLabels: m.knLabels,
			Help: "Requests in the breaker: in flight to the app and waiting for a slot (Knative's)."},
			func() float64 { return float64(p.breaker.InFlight() + p.breaker.Waiting()) }))
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
