package learned

import "slices"

// PredictorExact, kept to compare the policy with: a revision's gaps often
// repeat exactly (a timer's period, the spacing of a batch), so it keeps
// the exact length of each of the latest recentGaps gaps and predicts the
// next gap as a mixture of
//
//   - a repeat (with the share of the latest gaps that repeated an earlier
//     one within exactSlack seconds, a Beta posterior worth one gap): one
//     of the latest gaps, each a point of exactSlack seconds either side;
//   - a new length, from the hazard of the gaps that repeated none before
//     them (their own histogram, the policy's Bayesian estimate).
//
// A point [v-1, v+1] is worth a replica when the cost of a cold start
// times the chance that a gap that reached it ends in it pays for its
// seconds; a bin, when the same holds for the new lengths' share of each
// of its seconds. It needs about 650 bytes more per revision than the
// policy, so the decider keeps this state only while the predictor is in
// use (Policy.UsePredictor).

// exactSlack is how far, in seconds, a gap may be from another and still
// repeat it.
const exactSlack = 1

// exactGaps is PredictorExact's history beside idleGaps'.
type exactGaps struct {
	// length[i] is the exact length (at most maxGap) of the gap in slot i
	// of idleGaps' ring of latest gaps, repeat[i] whether it repeated one
	// of the gaps before it there.
	length [recentGaps]uint16
	repeat [recentGaps]bool
	// fresh counts the gaps that repeated none before them, by bin (halved
	// as idleGaps.counts is).
	fresh      [128]uint16
	freshTotal int
	// ranges are the ranges of idle time worth a replica, in order
	// (recompute).
	ranges []keepRange
}

// keepRange is a range [lo, hi) of idle seconds.
type keepRange struct{ lo, hi int64 }

// newExactGaps starts PredictorExact's history from h's: lengths are
// known only to their bin (its lower edge), and every gap counts as new.
func newExactGaps(h *idleGaps) *exactGaps {
	e := &exactGaps{fresh: h.counts, freshTotal: h.total}
	for i := range int(h.recentN) {
		bin, _ := h.recentGap(i)
		e.length[(int(h.recentAt)+i)%recentGaps] = uint16(gapEdges[bin])
	}
	return e
}

// add takes a gap of g seconds before h's ring holds it.
func (e *exactGaps) add(h *idleGaps, g int64) {
	g = min(g, maxGap)
	rep := false
	for i := range int(h.recentN) {
		if absDiff(int(e.length[(int(h.recentAt)+i)%recentGaps]), int(g)) <= exactSlack {
			rep = true
			break
		}
	}
	if !rep {
		if e.freshTotal >= maxGaps {
			e.freshTotal = 0
			for b := range gapBins {
				e.fresh[b] /= 2
				e.freshTotal += int(e.fresh[b])
			}
		}
		e.fresh[gapBin(g)]++
		e.freshTotal++
	}
	i := (int(h.recentAt) + int(h.recentN)) % recentGaps
	e.length[i], e.repeat[i] = uint16(g), rep
}

// recompute sets the ranges worth a replica for a cold start worth cost.
func (e *exactGaps) recompute(h *idleGaps, cost float64) {
	n := int(h.recentN)
	vals := make([]int, 0, n)
	repeats := 0
	for i := range n {
		j := (int(h.recentAt) + i) % recentGaps
		vals = append(vals, int(e.length[j]))
		if e.repeat[j] {
			repeats++
		}
	}
	slices.Sort(vals)
	rho := (float64(repeats) + 0.5) / (float64(n) + 1)
	var hz [128]float64
	hazardsOf(&e.fresh, e.freshTotal, &hz)
	var surv [129]float64
	for b := gapBins - 1; b >= 0; b-- {
		surv[b] = surv[b+1] + float64(e.fresh[b])
	}
	freshFrom := func(b int) float64 { return surv[b] / max(float64(e.freshTotal), 1) }
	from := func(lo int) (int, float64) { // the latest gaps at lo or more
		i, _ := slices.BinarySearch(vals, lo)
		return i, float64(n-i) / float64(n)
	}
	e.ranges = e.ranges[:0]
	for i, v := range vals {
		if (i > 0 && v == vals[i-1]) || v >= maxGap {
			continue
		}
		lo, hi := max(v-exactSlack, 2), v+exactSlack+1
		a, reached := from(lo)
		c, _ := slices.BinarySearch(vals, hi)
		b := gapBin(int64(lo))
		ends := rho*float64(c-a)/float64(n) + (1-rho)*hz[b]*float64(hi-lo)*freshFrom(b)
		if den := rho*reached + (1-rho)*freshFrom(b); den > 0 && cost*ends/den >= float64(hi-lo) {
			e.ranges = append(e.ranges, keepRange{int64(lo), int64(hi)})
		}
	}
	for b := range gapBins - 1 {
		_, reached := from(int(gapEdges[b]))
		if den := rho*reached + (1-rho)*freshFrom(b); hz[b] > 0 && den > 0 && cost*(1-rho)*hz[b]*freshFrom(b)/den >= 1 {
			e.ranges = append(e.ranges, keepRange{gapEdges[b], gapEdges[b+1]})
		}
	}
	slices.SortFunc(e.ranges, func(x, y keepRange) int { return int(x.lo - y.lo) })
	for b := range gapBins - 1 { // the bins that hold a kept second, for the reasons
		for _, r := range e.ranges {
			if r.lo < gapEdges[b+1] && r.hi > gapEdges[b] {
				h.keepPhases[b] = everyPhase
				break
			}
		}
	}
}

// keptIn is idleGaps.keptIn for PredictorExact.
func (e *exactGaps) keptIn(from, to int64) (sec int64, bin int, ok bool) {
	for _, r := range e.ranges {
		if r.hi <= from {
			continue
		}
		if r.lo > to {
			break
		}
		s := max(r.lo, from)
		return s, gapBin(s), true
	}
	return 0, -1, false
}
