package autoscaler

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"ebb.dev/ebb/pkg/decider"
)

// metrics are the autoscaler's Prometheus metrics. Per-revision series
// carry only the revision's namespace and name (and, for decisions, the
// reason code: a fixed vocabulary), so cardinality is bounded by the
// revisions. Histograms are global.
type metrics struct {
	stable, panicAvg, target     *prometheus.GaugeVec
	desired, recommended, ready  *prometheus.GaugeVec
	ebc, panicMode, activator    *prometheus.GaugeVec
	decisions                    *prometheus.CounterVec
	scrapeErrors                 *prometheus.CounterVec
	scrapeDuration, tickDuration prometheus.Histogram
	revisions                    prometheus.Gauge
	statsRefused                 *prometheus.CounterVec
}

var revisionLabels = []string{"namespace", "revision"}

func newMetrics(reg prometheus.Registerer) *metrics {
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ebb_autoscaler_" + name, Help: help}, append(revisionLabels[:2:2], labels...))
	}
	m := &metrics{
		stable:      gauge("stable_average", "Observed average of the scaling metric over the stable window (requests in flight, or requests per second).", "metric"),
		panicAvg:    gauge("panic_average", "Observed average of the scaling metric over the panic window.", "metric"),
		target:      gauge("target_per_pod", "The per-pod target of the scaling metric, after utilization.", "metric"),
		desired:     gauge("desired_replicas", "The replica count the autoscaler applied (after every bound)."),
		recommended: gauge("recommended_replicas", "The decider's recommendation before min/max scale and scale-to-zero handling; -1 before data."),
		ready:       gauge("ready_replicas", "Ready replicas at the last decision."),
		ebc:         gauge("excess_burst_capacity", "Spare capacity beyond target-burst-capacity; negative keeps the activator in the path."),
		panicMode:   gauge("panic_mode", "1 while the revision's decider is in panic mode."),
		activator:   gauge("activator_in_path", "1 while requests go through the activator."),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ebb_autoscaler_decisions_total",
			Help: "Decisions, by the reasons they carried (one count per reason)."}, append(revisionLabels[:2:2], "reason")),
		scrapeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ebb_autoscaler_scrape_errors_total",
			Help: "Seconds whose scrape of the revision's pods failed (nothing recorded from the pods)."}, revisionLabels),
		scrapeDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ebb_autoscaler_scrape_duration_seconds",
			Help: "Time to scrape one revision's sample of pods.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 12)}),
		tickDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ebb_autoscaler_tick_duration_seconds",
			Help: "Time from the end of a second to its decision applied (scrape, decide, apply).", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		revisions: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ebb_autoscaler_revisions", Help: "Revisions autoscaled."}),
		statsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ebb_autoscaler_stats_refused_total",
			Help: "POST /v1/stats refused before anything changed, by HTTP status (401, 403, 415, 421, 429, 503)."}, []string{"code"}),
	}
	reg.MustRegister(m.stable, m.panicAvg, m.target, m.desired, m.recommended, m.ready, m.ebc, m.panicMode, m.activator,
		m.decisions, m.scrapeErrors, m.scrapeDuration, m.tickDuration, m.revisions, m.statsRefused)
	return m
}

// revisionMetrics are one revision's series, looked up once.
type revisionMetrics struct {
	m                           *metrics
	key                         RevisionKey
	metric                      string // the metric label
	stable, panicAvg, target    prometheus.Gauge
	desired, recommended, ready prometheus.Gauge
	ebc, panicMode, activator   prometheus.Gauge
	scrapeErrors                prometheus.Counter
	// reasons are the revision's decision counters looked up so far, by
	// reason code: a revision meets a handful of codes, and a label lookup
	// at every decision would hash three labels for each reason.
	reasons []reasonCounter
}

type reasonCounter struct {
	code decider.Code
	c    prometheus.Counter
}

// reason is the revision's counter of decisions with the reason code.
func (rm *revisionMetrics) reason(code decider.Code) prometheus.Counter {
	for _, rc := range rm.reasons {
		if rc.code == code {
			return rc.c
		}
	}
	c := rm.m.decisions.WithLabelValues(rm.key.Namespace, rm.key.Name, string(code))
	rm.reasons = append(rm.reasons, reasonCounter{code, c})
	return c
}

func (m *metrics) forRevision(key RevisionKey, metric string) *revisionMetrics {
	if m == nil {
		return nil
	}
	l := []string{key.Namespace, key.Name}
	lm := []string{key.Namespace, key.Name, metric}
	return &revisionMetrics{m: m, key: key, metric: metric,
		stable: m.stable.WithLabelValues(lm...), panicAvg: m.panicAvg.WithLabelValues(lm...), target: m.target.WithLabelValues(lm...),
		desired: m.desired.WithLabelValues(l...), recommended: m.recommended.WithLabelValues(l...), ready: m.ready.WithLabelValues(l...),
		ebc: m.ebc.WithLabelValues(l...), panicMode: m.panicMode.WithLabelValues(l...), activator: m.activator.WithLabelValues(l...),
		scrapeErrors: m.scrapeErrors.WithLabelValues(l...)}
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
	if d.HasData {
		rm.stable.Set(d.Stable)
		rm.panicAvg.Set(d.PanicAverage)
	}
	rm.target.Set(target)
	rm.desired.Set(float64(d.Desired))
	rm.recommended.Set(float64(d.Recommended))
	rm.ready.Set(float64(ready))
	rm.ebc.Set(float64(d.EBC))
	rm.panicMode.Set(boolGauge(d.Panic))
	rm.activator.Set(boolGauge(d.ActivatorInPath))
	for _, r := range d.Reasons() {
		rm.reason(r.Code).Inc()
	}
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
		rm.scrapeErrors.Inc()
	}
}

func (rm *revisionMetrics) ticked(d time.Duration) {
	if rm != nil {
		rm.m.tickDuration.Observe(d.Seconds())
	}
}

// forget removes the revision's series, each by its whole label set: a
// partial match scans every series of a vector, and a hundred thousand
// revisions would each scan a million. Nil-safe.
func (rm *revisionMetrics) forget() {
	if rm == nil {
		return
	}
	m, ns, name := rm.m, rm.key.Namespace, rm.key.Name
	for _, v := range []*prometheus.GaugeVec{m.stable, m.panicAvg, m.target} {
		v.DeleteLabelValues(ns, name, rm.metric)
	}
	for _, v := range []*prometheus.GaugeVec{m.desired, m.recommended, m.ready, m.ebc, m.panicMode, m.activator} {
		v.DeleteLabelValues(ns, name)
	}
	for _, rc := range rm.reasons {
		m.decisions.DeleteLabelValues(ns, name, string(rc.code))
	}
	m.scrapeErrors.DeleteLabelValues(ns, name)
}

// refused counts a refused stats report; nil-safe.
func (m *metrics) refused(code int) {
	if m != nil {
		m.statsRefused.WithLabelValues(strconv.Itoa(code)).Inc()
	}
}
