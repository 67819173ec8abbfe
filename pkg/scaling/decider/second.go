package decider

import "ebb.dev/ebb/pkg/stats"

// PodTotals are the revision-wide totals of a scraped sample of its ready
// pods' reports: each pod's concurrency and request rate without what came
// through the activator (the activator reports that itself), scaled from
// the sample to all ready pods. The live autoscaler and `autoscaler whatif`
// both compute a second's load with it.
func PodTotals(sample []stats.Stat, ready int) (conc, rps float64) {
	if len(sample) == 0 {
		return 0, 0
	}
	for _, st := range sample {
		conc += st.AverageConcurrency - st.AverageProxiedConcurrency
		rps += st.RequestRate() - st.ProxiedRequestRate()
	}
	scale := float64(ready) / float64(len(sample))
	return conc * scale, rps * scale
}

// ActivatorTotals sums activator reports for one second: their concurrency
// and request rate are the revision's traffic through the activator.
func ActivatorTotals(reports []stats.Stat) (conc, rps float64) {
	for _, st := range reports {
		conc += st.AverageConcurrency
		rps += st.RequestRate()
	}
	return conc, rps
}

// SecondOf combines the parts of one second of a KPA revision into the
// decider's input: the ready count, the pods' totals (when scraped) and
// the activator's reports. ready is the caller's (a Second points to its
// ready count; one of the caller's own costs no allocation each second).
func SecondOf(ready *int32, scraped bool, podConc, podRPS float64, reports []stats.Stat) Second {
	actConc, actRPS := ActivatorTotals(reports)
	sec := Second{Ready: ready}
	if scraped || len(reports) > 0 {
		sec.HasMetric = true
		sec.Concurrency = podConc + actConc
		sec.RPS = podRPS + actRPS
	}
	return sec
}
