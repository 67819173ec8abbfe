package autoscaler

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/decider"
)

// metrics are the autoscaler's Prometheus metrics. Per-revision series
// carry only the revision's namespace and name (and, for decisions, the
// reason code: a fixed vocabulary), so cardinality is bounded by the
// revisions. Histograms are global.
//
// The per-revision series are not Prometheus children (about 600 bytes
// each, fourteen a revision: more than the revision itself): each revision
// keeps its numbers (revisionMetrics) and revisionCollector reads them at
// scrape time. A resting revision exports none: it is at zero, and a
// million of them would be fourteen million series of zeros.
type metrics struct {
	scrapeDuration, tickDuration prometheus.Histogram
	revisions, resting           prometheus.Gauge
	statsRefused                 *prometheus.CounterVec
	wakes                        *prometheus.CounterVec   // by from: parked, zero
	wakeDuration                 *prometheus.HistogramVec // by from
}

const metricPrefix = "ebb_autoscaler_"

// revisionDescs are the per-revision series, in revisionMetrics.values order.
var revisionDescs = func() []*prometheus.Desc {
	gauge := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(metricPrefix+name, help, append([]string{"namespace", "revision"}, labels...), nil)
	}
	return []*prometheus.Desc{
		gauge("stable_average", "Observed average of the scaling metric over the stable window (requests in flight, or requests per second).", "metric"),
		gauge("panic_average", "Observed average of the scaling metric over the panic window.", "metric"),
		gauge("target_per_pod", "The per-pod target of the scaling metric, after utilization.", "metric"),
		gauge("desired_replicas", "The replica count the autoscaler applied (after every bound)."),
		gauge("recommended_replicas", "The decider's recommendation before min/max scale and scale-to-zero handling; -1 before data."),
		gauge("ready_replicas", "Ready replicas at the last decision."),
		gauge("excess_burst_capacity", "Spare capacity beyond target-burst-capacity; negative keeps the activator in the path."),
		gauge("panic_mode", "1 while the revision's decider is in panic mode."),
		gauge("activator_in_path", "1 while requests go through the activator."),
		gauge("decisions_total", "Decisions, by the reasons they carried (one count per reason).", "reason"),
		gauge("scrape_errors_total", "Seconds whose scrape of the revision's pods failed (nothing recorded from the pods)."),
	}
}()

// knativeDescs are Knative's per-revision autoscaler series, under
// Knative's names and labels (namespace_name, revision_name,
// configuration_name, service_name: config.NamesOf), beside Ebb's own, so
// that a Knative dashboard or alert reads an Ebb autoscaler unchanged
// (docs/dashboard.md lists them). The metric's own trio exists for the
// revision's scaling metric only: concurrency or rps.
var knativeDescs = func() []*prometheus.Desc {
	gauge := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("autoscaler_"+name, help, config.KnativeLabelNames, nil)
	}
	return []*prometheus.Desc{
		knDesired:    gauge("desired_pods", "Number of pods the autoscaler wants (Knative's desired_pods; Ebb's desired replicas)."),
		knRequested:  gauge("requested_pods", "Number of pods the autoscaler requested of the platform."),
		knActual:     gauge("actual_pods", "Number of ready pods at the last decision."),
		knEBC:        gauge("excess_burst_capacity", "Excess burst capacity over the stable window; negative keeps the activator in the path."),
		knPanicMode:  gauge("panic_mode", "1 if the autoscaler is in panic mode, 0 otherwise."),
		knStableConc: gauge("stable_request_concurrency", "Requests in flight averaged over the stable window (the revision's total)."),
		knPanicConc:  gauge("panic_request_concurrency", "Requests in flight averaged over the panic window (the revision's total)."),
		knTargetConc: gauge("target_concurrency_per_pod", "The target of requests in flight for each pod."),
		knStableRPS:  gauge("stable_requests_per_second", "Requests per second averaged over the stable window (the revision's total)."),
		knPanicRPS:   gauge("panic_requests_per_second", "Requests per second averaged over the panic window (the revision's total)."),
		knTargetRPS:  gauge("target_requests_per_second", "The target of requests per second for each pod."),
	}
}()

// Indexes into knativeDescs.
const (
	knDesired = iota
	knRequested
	knActual
	knEBC
	knPanicMode
	knStableConc
	knPanicConc
	knTargetConc
	knStableRPS
	knPanicRPS
	knTargetRPS
)

// Indexes into revisionDescs.
const (
	descStable = iota
	descPanic
	descTarget
	descDesired
	descRecommended
	descReady
	descEBC
	descPanicMode
	descActivator
	descDecisions
	descScrapeErrors
)

func newMetrics(reg prometheus.Registerer, list func() []*revision) *metrics {
	m := &metrics{
		scrapeDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: metricPrefix + "scrape_duration_seconds",
			Help: "Time to scrape one revision's sample of pods.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 12)}),
		tickDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: metricPrefix + "tick_duration_seconds",
			Help:    "Time from the moment a second was due (its end, plus the revision's phase) to its decision applied (scrape, decide, apply).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		revisions: prometheus.NewGauge(prometheus.GaugeOpts{Name: metricPrefix + "revisions", Help: "Revisions autoscaled."}),
		resting: prometheus.NewGauge(prometheus.GaugeOpts{Name: metricPrefix + "resting_revisions",
			Help: "Revisions at zero without traffic that rest (not stepped every second; no per-revision series)."}),
		statsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricPrefix + "stats_refused_total",
			Help: "POST /v1/stats refused before anything changed, by HTTP status (401, 403, 415, 421, 429, 503)."}, []string{"code"}),
	}
	m.wakes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricPrefix + "wakes_total",
		Help: "Revisions woken, by where from: parked (a parked replica's requests restored) or zero (replicas asked for again)."}, []string{"from"})
	m.wakeDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: metricPrefix + "wake_duration_seconds",
		Help: "Time a wake took, by where from. parked: the resize back to the template's requests, written (the replica serves " +
			"throughout); zero: from the decision to the first second with a ready replica.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}, []string{"from"})
	for _, from := range []string{wakeFromParked, wakeFromZero} { // both series exist from the start
		m.wakes.WithLabelValues(from)
		m.wakeDuration.WithLabelValues(from)
	}
	reg.MustRegister(m.scrapeDuration, m.tickDuration, m.revisions, m.resting, m.statsRefused, m.wakes, m.wakeDuration, revisionCollector{list})
	return m
}

// revisionCollector exports the per-revision series of the revisions that
// do not rest, from their revisionMetrics.
type revisionCollector struct {
	list func() []*revision
}

func (revisionCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range revisionDescs {
		ch <- d
	}
	for _, d := range knativeDescs {
		ch <- d
	}
}

func (c revisionCollector) Collect(ch chan<- prometheus.Metric) {
	for _, r := range c.list() {
		if rm := r.metrics.Load(); rm != nil && !r.asleep.Load() {
			rm.collect(ch, r.key, r.names.Load())
		}
	}
}

// revisionMetrics are one revision's numbers: its owner writes them at
// each decision and scrape, the collector reads them.
type revisionMetrics struct {
	m      *metrics
	metric string // the metric label

	mu           sync.Mutex // guards everything below
	stable       float64    // of the last decision with data
	panicAvg     float64
	hasData      bool // stable and panicAvg were set
	target       float64
	decided      bool
	desired, rec int32
	ready, ebc   int32
	panicMode    bool
	activator    bool
	reasons      []reasonCount
	scrapeErrors uint64
}

// reasonCount is how many decisions carried a reason.
type reasonCount struct {
	code decider.Code
	n    uint64
}

// forRevision returns the numbers of a revision whose scaling metric is
// metric; nil without metrics.
func (m *metrics) forRevision(metric string) *revisionMetrics {
	if m == nil {
		return nil
	}
	return &revisionMetrics{m: m, metric: metric}
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// observe records a decision.
func (rm *revisionMetrics) observe(d *decider.Decision, ready int32, target float64) {
	if rm == nil {
		return
	}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if d.HasData {
		rm.stable, rm.panicAvg, rm.hasData = d.Stable, d.PanicAverage, true
	}
	rm.target, rm.decided = target, true
	rm.desired, rm.rec, rm.ready, rm.ebc = d.Desired, d.Recommended, ready, d.EBC
	rm.panicMode, rm.activator = d.Panic, d.ActivatorInPath
	for _, r := range d.Reasons() {
		rm.count(r.Code)
	}
}

func (rm *revisionMetrics) count(code decider.Code) {
	for i := range rm.reasons {
		if rm.reasons[i].code == code {
			rm.reasons[i].n++
			return
		}
	}
	rm.reasons = append(rm.reasons, reasonCount{code, 1})
}

// collect sends the revision's series; names are its Knative names (nil:
// config.NamesOf without labels).
func (rm *revisionMetrics) collect(ch chan<- prometheus.Metric, key RevisionKey, names *config.KnativeNames) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	ns, name := key.Namespace, key.Name
	gauge := func(i int, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(revisionDescs[i], prometheus.GaugeValue, v, append([]string{ns, name}, labels...)...)
	}
	counter := func(i int, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(revisionDescs[i], prometheus.CounterValue, float64(v), append([]string{ns, name}, labels...)...)
	}
	counter(descScrapeErrors, rm.scrapeErrors)
	if !rm.decided {
		return
	}
	if rm.hasData {
		gauge(descStable, rm.stable, rm.metric)
		gauge(descPanic, rm.panicAvg, rm.metric)
	}
	gauge(descTarget, rm.target, rm.metric)
	gauge(descDesired, float64(rm.desired))
	gauge(descRecommended, float64(rm.rec))
	gauge(descReady, float64(rm.ready))
	gauge(descEBC, float64(rm.ebc))
	gauge(descPanicMode, boolGauge(rm.panicMode))
	gauge(descActivator, boolGauge(rm.activator))
	for _, rc := range rm.reasons {
		counter(descDecisions, rc.n, string(rc.code))
	}
	rm.collectKnative(ch, key, names)
}

// collectKnative sends Knative's series of a revision that decided; the
// caller holds rm.mu.
func (rm *revisionMetrics) collectKnative(ch chan<- prometheus.Metric, key RevisionKey, names *config.KnativeNames) {
	n := config.NamesOf(key.Namespace, key.Name, nil)
	if names != nil {
		n = *names
	}
	labels := n.Labels()
	gauge := func(i int, v float64) {
		ch <- prometheus.MustNewConstMetric(knativeDescs[i], prometheus.GaugeValue, v, labels...)
	}
	gauge(knDesired, float64(rm.desired))
	gauge(knRequested, float64(rm.desired))
	gauge(knActual, float64(rm.ready))
	gauge(knEBC, float64(rm.ebc))
	gauge(knPanicMode, boolGauge(rm.panicMode))
	stable, panicAvg, target := knStableConc, knPanicConc, knTargetConc
	switch rm.metric {
	case config.MetricConcurrency:
	case config.MetricRPS:
		stable, panicAvg, target = knStableRPS, knPanicRPS, knTargetRPS
	default:
		return
	}
	if rm.hasData {
		gauge(stable, rm.stable)
		gauge(panicAvg, rm.panicAvg)
	}
	gauge(target, rm.target)
}

// now reads the clock for a duration to observe; the zero time without
// metrics (no clock read).
func (rm *revisionMetrics) now(c Clock) time.Time {
	if rm == nil {
		return time.Time{}
	}
	return c.Now()
}

// scraped observes a scrape that began at began (revisionMetrics.now).
func (rm *revisionMetrics) scraped(c Clock, began time.Time, err error) {
	if rm == nil {
		return
	}
	rm.m.scrapeDuration.Observe(c.Now().Sub(began).Seconds())
	if err != nil {
		rm.mu.Lock()
		rm.scrapeErrors++
		rm.mu.Unlock()
	}
}

func (rm *revisionMetrics) ticked(d time.Duration) {
	if rm != nil {
		rm.m.tickDuration.Observe(d.Seconds())
	}
}

// rested counts a revision going to rest (1) or waking (-1); nil-safe.
func (m *metrics) rested(d float64) {
	if m != nil {
		m.resting.Add(d)
	}
}

// refused counts a refused stats report; nil-safe.
func (m *metrics) refused(code int) {
	if m != nil {
		m.statsRefused.WithLabelValues(strconv.Itoa(code)).Inc()
	}
}

// woke counts a wake from where it came (wakeFromParked, wakeFromZero)
// and observes how long it took; nil-safe.
func (m *metrics) woke(from string, took time.Duration) {
	if m != nil {
		m.wakes.WithLabelValues(from).Inc()
		m.wakeDuration.WithLabelValues(from).Observe(took.Seconds())
	}
}
