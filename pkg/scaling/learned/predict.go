package learned

import (
	"fmt"
	"math"
)

// The predictor turns the idle-gap history into keep bits: which bins of
// idle time are worth a replica for the next gap. Every predictor weighs
// a bin by its hazard h (the gaps that end in it for each second of idle
// time spent in it) and keeps it when
//
//	cold-start-cost × cold requests per gap × h >= 1,
//
// the cold starts a replica there saves against the replica time it costs
// (the hybrid histogram predictor, the published anchor, uses percentile
// cut-offs instead: compare.go). They differ in which gaps they count.

// Predictor names a way to predict the next idle gap. PredictorPhase is
// the policy's; the others exist to compare it with (`make bench-whatif
// PREDICTORS=all`, docs/whatif.md).
type Predictor uint8

const (
	// PredictorPhase: PredictorSequence's hazard, spread over the seconds
	// of the minute at which the latest long gaps ended (phase.go).
	PredictorPhase Predictor = iota
	// PredictorSequence: the gaps that followed a gap in the same bin as
	// the latest one (a transition table over the latest recentGaps gaps),
	// shrunk toward the whole history's hazard, with the cold-start cost
	// counted per request that would start cold (the requests of a gap's
	// first two seconds, averaged over the gaps): the policy before it read
	// the second of the minute.
	PredictorSequence
	// PredictorHistogram: every gap of the history alike (the policy
	// before it read the order of gaps).
	PredictorHistogram
	// PredictorHistogramPhase: PredictorHistogram's hazard spread over
	// the seconds of the minute as PredictorPhase spreads its own.
	PredictorHistogramPhase
	// PredictorExact: the exact lengths of the latest gaps, each a point
	// of one second either side, mixed with the hazard of the gaps that
	// repeated none before them: a Comparison (pkg/scaling/whatif/compare).
	PredictorExact
	// PredictorTransition: PredictorSequence with one cold start per gap.
	PredictorTransition
	// PredictorRecency: the latest gaps weighted by their age (a half-life
	// of 16 gaps), shrunk toward the whole history's hazard.
	PredictorRecency
	// PredictorTimeOfDay: the latest gaps that ended within an hour of the
	// time of day now, shrunk toward the whole history's hazard.
	PredictorTimeOfDay
	// PredictorHybridHistogram: Shahrad et al.'s hybrid histogram policy
	// ("Serverless in the Wild", USENIX ATC '20), the published anchor. Its
	// code is not here: the server does not run it, so it lives with
	// whatif (pkg/scaling/whatif/compare) and reaches the policy as a Comparison
	// (Policy.UseComparison); UsePredictor ignores it.
	PredictorHybridHistogram
	predictorCount
)

var predictorNames = [predictorCount]string{"phase", "sequence", "histogram", "histogram-phase", "exact", "transition", "recency",
	"time-of-day", "hybrid-histogram"}

func (p Predictor) String() string {
	if p < predictorCount {
		return predictorNames[p]
	}
	return fmt.Sprintf("Predictor(%d)", uint8(p))
}

// Comparison reports whether p's code is a Comparison's, outside this
// package (UseComparison).
func (p Predictor) Comparison() bool { return p < predictorCount && predictorTable[p].comparison }

// Predictors lists every predictor, the policy's (PredictorPhase) first.
func Predictors() []Predictor {
	out := make([]Predictor, predictorCount)
	for i := range out {
		out[i] = Predictor(i)
	}
	return out
}

// ParsePredictor returns the predictor of a name of Predictor.String.
func ParsePredictor(s string) (Predictor, error) {
	for i, n := range predictorNames {
		if n == s {
			return Predictor(i), nil
		}
	}
	return 0, fmt.Errorf("predictor %q: want one of %v", s, predictorNames)
}

// predictorParams are what a Predictor counts.
type predictorParams struct {
	// comparison: the predictor's code is a Comparison's, outside this
	// package (PredictorHybridHistogram).
	comparison bool
	recent     bool // the latest gaps, shrunk toward the whole history
	// prevBins >= 0: only the latest gaps whose predecessor's bin is within
	// prevBins of the latest gap's.
	prevBins int
	halfLife float64 // gaps; 0: no weighting by age
	todHours int     // >= 0: only the gaps that ended within todHours of now
	// shrink is the weight, in gaps, of the whole history's hazard in the
	// hazard of the latest gaps counted.
	shrink float64
	// perRequest counts the cold-start cost per request that starts cold.
	perRequest bool
	// phase spreads the hazard of long bins over the seconds of the
	// minute (phase.go).
	phase bool
}

var predictorTable = [predictorCount]predictorParams{
	PredictorPhase:           {recent: true, prevBins: 0, todHours: -1, shrink: 0.3, perRequest: true, phase: true},
	PredictorSequence:        {recent: true, prevBins: 0, todHours: -1, shrink: 0.3, perRequest: true},
	PredictorHistogram:       {prevBins: -1, todHours: -1},
	PredictorHistogramPhase:  {prevBins: -1, todHours: -1, phase: true},
	PredictorExact:           {comparison: true, prevBins: -1, todHours: -1},
	PredictorTransition:      {recent: true, prevBins: 0, todHours: -1, shrink: 0.3},
	PredictorRecency:         {recent: true, prevBins: -1, halfLife: 16, todHours: -1, shrink: 1},
	PredictorTimeOfDay:       {recent: true, prevBins: -1, todHours: 1, shrink: 1},
	PredictorHybridHistogram: {comparison: true, prevBins: -1, todHours: -1},
}

const (
	// hazardPrior is the weight, in gaps, of the neighbourhood's hazard in
	// a bin's: half a gap, so that one gap of the bin's own outweighs it.
	hazardPrior = 0.5
	// nearFactor bounds a bin's neighbourhood: the bins whose lower edge
	// lies within [lo/nearFactor, lo*nearFactor).
	nearFactor = math.Sqrt2
)

// gapNear holds, for each bin but the last, its neighbourhood: the bins
// [from, to) whose lower edges lie within a factor nearFactor of its own.
var gapNear = func() [][2]uint8 {
	near := make([][2]uint8, gapBins-1)
	for b := range near {
		lo, hi := float64(gapEdges[b])/nearFactor, float64(gapEdges[b])*nearFactor
		from, to := b, b+1
		for from > 0 && float64(gapEdges[from-1]) >= lo {
			from--
		}
		for to < gapBins-1 && float64(gapEdges[to]) < hi {
			to++
		}
		near[b] = [2]uint8{uint8(from), uint8(to)}
	}
	return near
}()

// Hazards sets hz[b] to the hazard of bin b of a histogram of total gaps
// on the policy's bins (BinOf), estimated as the policy estimates its
// own: the bin's gaps with a prior from its neighbourhood. For
// Comparisons that count gaps of their own.
func Hazards(counts *[128]uint16, total int, hz *[128]float64) { hazardsOf(counts, total, hz) }

// hazards sets hz[b] to the hazard of bin b estimated from the whole
// history (the comment of policy.go: the bin's own gaps with a
// prior from its neighbourhood), 0 where no gap reached it or none ended
// near it.
func (h *idleGaps) hazards(hz *[128]float64) { hazardsOf(&h.counts, h.total, hz) }

// hazardsOf is hazards for a histogram of total gaps.
func hazardsOf(counts *[128]uint16, total int, hz *[128]float64) {
	var ended, exposure [129]float64
	n, all := gapBins-1, float64(total)
	for b := range n {
		ended[b+1] = ended[b] + float64(counts[b])
		exposure[b+1] = exposure[b] + float64(gapEdges[b+1]-gapEdges[b])*(all-ended[b])
	}
	for b := range n {
		hz[b] = 0
		from, to := int(gapNear[b][0]), int(gapNear[b][1])
		nearEnded := ended[to] - ended[from]
		if all == ended[b] || nearEnded == 0 {
			continue // no gap lasted this long, or none ended near it
		}
		nearExposure := exposure[to] - exposure[from]
		own := exposure[b+1] - exposure[b]
		hz[b] = (float64(counts[b]) + hazardPrior) / (own + hazardPrior*nearExposure/nearEnded)
	}
}

// recentCounts sets m to the latest gaps that p counts for the next gap
// (the gap after the latest one, at hour of the day hour), by bin and
// weighted, and returns their sum.
func (h *idleGaps) recentCounts(p *predictorParams, hour uint8, m *[128]float64) float64 {
	n := int(h.recentN)
	if n == 0 {
		return 0
	}
	last, _ := h.recentGap(n - 1)
	total := 0.0
	for i := range n {
		bin, hr := h.recentGap(i)
		if p.prevBins >= 0 {
			if i == 0 {
				continue // its predecessor is gone
			}
			if prev, _ := h.recentGap(i - 1); absDiff(int(prev), int(last)) > p.prevBins {
				continue
			}
		}
		if p.todHours >= 0 && (hr == noHour || hourDistance(hr, hour) > p.todHours) {
			continue
		}
		w := 1.0
		if p.halfLife > 0 {
			w = math.Exp2(-float64(n-1-i) / p.halfLife)
		}
		m[bin] += w
		total += w
	}
	return total
}

func absDiff(a, b int) int { return max(a-b, b-a) }

// hourDistance is the distance between two hours of the day, around the
// clock.
func hourDistance(a, b uint8) int {
	d := absDiff(int(a), int(b))
	return min(d, 24-d)
}

// recompute sets the keep bits for the next gap, at hour of the day hour,
// for a cold start worth cost seconds: keepPhases, the bins worth an awake
// replica (cost × hazard >= 1), and, when parking is on (park.cost > 0),
// parkPhases, the bins worth a parked one (parkBits).
func (h *idleGaps) recompute(p *predictorParams, cost float64, park parking, hour uint8) {
	h.keepPhases = [128]uint8{}
	h.parkPhases = [128]uint8{}
	switch {
	case h.cmp != nil:
		h.cmp.recompute(cost)
		return
	}
	var hz [128]float64
	h.hazards(&hz)
	if p.recent {
		var m [128]float64
		reached := h.recentCounts(p, hour, &m)
		// The gaps counted, as a Gamma posterior whose prior is the whole
		// history's hazard worth p.shrink gaps: a bin the counted gaps
		// never reached keeps the history's hazard.
		for b := range gapBins - 1 {
			if hz[b] > 0 {
				exposure := float64(gapEdges[b+1]-gapEdges[b]) * reached
				hz[b] = (m[b] + p.shrink) / (exposure + p.shrink/hz[b])
			}
			reached -= m[b]
		}
	}
	var share [60]float64
	if p.phase {
		share = h.rankPhases()
	}
	fill := func(keep *[128]uint8, cost float64) {
		for b := range gapBins - 1 {
			switch v := cost * hz[b]; {
			case hz[b] == 0:
			case p.phase && gapEdges[b] >= PhaseMinGap:
				keep[b] = phasesWorth(v, &share)
			case v >= 1:
				keep[b] = everyPhase
			}
		}
	}
	fill(&h.keepPhases, cost)
	if park.cost > 0 {
		fill(&h.parkPhases, cost/park.cost)
		h.parkBits(&hz, cost/park.cost, park.max)
	}
}

// parking is what the keep bits of a parked replica depend on: a parked
// second's cost as a fraction of an awake one's (0: parking off), and
// max-parked-duration in seconds (0: no limit).
type parking struct {
	cost float64
	max  int64
}

// parkBits adds to parkPhases (which holds the bins whose own hazard pays
// for a parked replica) the bins where staying parked is worth it for the
// rest of the gap: a parked second costs 1 and a gap that ends with no
// replica costs cost (a cold start over parked-cost). With hazard hz[b]
// in bin b of width w, a gap that reached the bin ends in it with
// probability 1 - s, s = exp(-hz[b] w), after (1 - s) / hz[b] seconds in
// it on average; so the expected cost from the start of bin b on of a
// replica kept parked there and decided on again at the next bin is
//
//	stay[b] = (1 - s) / hz[b] + s × V[b+1],  V[b] = min(stay[b], cost),
//
// where releasing it costs a cold start (cost) for the gap's request.
// This is the optimal stopping of a parked replica under the hazards: it
// keeps the replica through a stretch of idle time whose own gaps are too
// few to pay for it when the gaps after it pay for the stretch, and
// releases it as soon as the parked time the rest of the gap is expected
// to take costs more than the cold start it spares. The last bin (gaps of
// maxGap and more) and the bins past max-parked-duration (maxParked, 0:
// none) are released.
//
// Past the longest gap of the history, where no gap says anything, the
// hazard is not 0 (the gap ends some time) but unknown: there it is the
// scale-free 1/t of idle time t, under which a gap that lasted t is as
// likely as not to last 2t (the prior that assumes no time scale). The
// awake keep bits keep 0 there: an idle replica never pays for such odds.
func (h *idleGaps) parkBits(hz *[128]float64, cost float64, maxParked int64) {
	next := cost // V of the bin after the current one
	reached := 0 // the gaps in bins b and above
	for b := gapBins - 2; b >= 0; b-- {
		lo, hi := gapEdges[b], gapEdges[b+1]
		reached += int(h.counts[b])
		if maxParked > 0 && hi > maxParked {
			next = cost
			continue
		}
		w := float64(hi - lo)
		hb := hz[b]
		if reached+int(h.counts[gapBins-1]) == 0 {
			hb = 1 / float64(lo)
		}
		var stay float64
		if hb > 0 {
			s := math.Exp(-hb * w)
			stay = (1-s)/hb + s*next
		} else {
			stay = w + next
		}
		if stay < cost {
			h.parkPhases[b] = everyPhase
			next = stay
		} else {
			next = cost
		}
	}
}

// endedNear is the number of gaps that reached bin b and ended before its
// neighbourhood does (the evidence a kept bin stands on).
func (h *idleGaps) endedNear(b int) int { return h.survivors(b) - h.survivors(int(gapNear[b][1])) }
