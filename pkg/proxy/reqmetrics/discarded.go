package reqmetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"ebb.dev/ebb/pkg/proxy/proxycore"
)

// Discarded is the counter of upstream connections a proxy closed instead
// of pooling because they were not clean (proxycore.ConnChecks), by
// reason: unsolicited_bytes (bytes found after an answer, or arriving on
// an idle connection) or ambiguous_framing (an answer framed two ways).
// It is read from c at scrape time: nothing on the request path.
func Discarded(name string, c *proxycore.ConnChecks, labels prometheus.Labels) prometheus.Collector {
	return discarded{desc: prometheus.NewDesc(name,
		"Upstream connections closed instead of reused because they were not clean, by reason.", []string{"reason"}, labels), c: c}
}

type discarded struct {
	desc *prometheus.Desc
	c    *proxycore.ConnChecks
}

func (d discarded) Describe(ch chan<- *prometheus.Desc) { ch <- d.desc }

func (d discarded) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(d.desc, prometheus.CounterValue, float64(d.c.Unsolicited.Load()), "unsolicited_bytes")
	ch <- prometheus.MustNewConstMetric(d.desc, prometheus.CounterValue, float64(d.c.Ambiguous.Load()), "ambiguous_framing")
}
