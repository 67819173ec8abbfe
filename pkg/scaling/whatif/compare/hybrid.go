// Package compare holds the predictors of idle gaps that exist only to be
// compared with the learned scale-to-zero policy's (pkg/scaling/learned),
// which the server does not run: whatif, `autoscaler tune` and `make
// bench-whatif` hand them to the policy as a learned.Comparison (New).
// Like the policy they are pure and deterministic.
package compare

import (
	"math"

	"ebb.dev/ebb/pkg/scaling/decider"
)

// New returns the Comparison of predictor p, nil when p's code is the
// policy's own (decider.Decider.UsePredictor takes those).
func New(p decider.Predictor) decider.Comparison {
	switch p {
	case decider.PredictorHybridHistogram:
		return &hybridHistogram{}
	case decider.PredictorExact:
		return &exact{}
	}
	return nil
}

// hybridHistogram is Shahrad et al.'s hybrid histogram policy
// ("Serverless in the Wild", USENIX ATC '20), the published anchor: the
// idle times of an application in a histogram of one-minute bins over 4
// hours, and a replica from the 5th percentile of the idle times less 10%
// to their 99th plus 10%. When the histogram is not representative (the
// coefficient of variation of its bins below 2), from the start of the
// idle time through the histogram's range; when most idle times fall out
// of that range, around a forecast of the next one (the last idle time
// out of range, 15% either side, where the paper fits an ARIMA model).
// The cost of a cold start does not enter: the percentiles are the
// paper's.
type hybridHistogram struct {
	minutes [hybridRange / 60]uint32
	// in counts the gaps in range, out those of hybridRange or more, the
	// last of which lasted last seconds.
	in, out uint32
	last    int64
}

// hybridRange is the histogram's range in seconds: 4 hours.
const hybridRange = 4 * 60 * 60

// Add takes an idle gap of g seconds.
func (h *hybridHistogram) Add(g int64) {
	if g >= hybridRange {
		h.out++
		h.last = g
		return
	}
	h.minutes[g/60]++
	h.in++
}

// Keep returns the idle seconds worth a replica for the next gap.
func (h *hybridHistogram) Keep(float64) []decider.KeepRange {
	switch {
	case h.in+h.out == 0:
		return nil
	case h.out > h.in: // out of range: around the forecast
		if h.last == 0 {
			return nil
		}
		g := float64(h.last)
		return []decider.KeepRange{{Lo: int64(g * 0.85), Hi: int64(math.Ceil(g * 1.15))}}
	case h.cv() < 2: // not representative: keep alive through the range
		return []decider.KeepRange{{Lo: 0, Hi: hybridRange}}
	}
	lo, hi := h.percentile(5)*0.9, h.percentile(99)*1.1
	return []decider.KeepRange{{Lo: int64(lo), Hi: int64(math.Ceil(hi))}}
}

// cv is the coefficient of variation of the bins.
func (h *hybridHistogram) cv() float64 {
	n := float64(len(h.minutes))
	mean := float64(h.in) / n
	sq := 0.0
	for _, c := range h.minutes {
		d := float64(c) - mean
		sq += d * d
	}
	return math.Sqrt(sq/n) / mean
}

// percentile is the q-th percentile of the in-range gaps in seconds,
// interpolated within its minute.
func (h *hybridHistogram) percentile(q float64) float64 {
	need, acc := q/100*float64(h.in), 0.0
	for m, c := range h.minutes {
		if c > 0 && acc+float64(c) >= need {
			return 60 * (float64(m) + (need-acc)/float64(c))
		}
		acc += float64(c)
	}
	return hybridRange
}
