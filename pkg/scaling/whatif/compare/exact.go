package compare

import (
	"slices"

	"ebb.dev/ebb/pkg/scaling/decider"
	"ebb.dev/ebb/pkg/scaling/learned"
)

// exact is decider.PredictorExact: a revision's gaps often repeat exactly
// (a timer's period, the spacing of a batch), so it keeps the exact length
// of each of the latest exactGaps gaps and predicts the next gap as a
// mixture of
//
//   - a repeat (with the share of the latest gaps that repeated an earlier
//     one within exactSlack seconds, a Beta posterior worth one gap): one
//     of the latest gaps, each a point of exactSlack seconds either side;
//   - a new length, from the hazard of the gaps that repeated none before
//     them (their own histogram on the policy's bins, the policy's
//     estimate: learned.Hazards).
//
// A point [v-1, v+1] is worth a replica when the cost of a cold start
// times the chance that a gap that reached it ends in it pays for its
// seconds; a bin, when the same holds for the new lengths' share of each
// of its seconds.
type exact struct {
	// length holds the exact lengths (at most learned.MaxGap) of the
	// latest gaps, a ring of n from at, and repeat whether each repeated
	// one of the gaps before it there.
	length [exactGaps]uint16
	repeat [exactGaps]bool
	at, n  int
	// fresh counts the gaps that repeated none before them, by bin
	// (halved when it holds exactMaxGaps, as the policy's histogram is).
	fresh      [128]uint16
	freshTotal int
}

const (
	// exactGaps is how many of the latest gaps Exact keeps (the policy's
	// sequence is as long).
	exactGaps = 128
	// exactSlack is how far, in seconds, a gap may be from another and
	// still repeat it.
	exactSlack = 1
	// exactMaxGaps is the count at which every bin of fresh is halved.
	exactMaxGaps = 2000
)

// Add takes an idle gap of g seconds.
func (e *exact) Add(g int64) {
	g = min(g, learned.MaxGap)
	rep := false
	for i := range e.n {
		if d := int64(e.length[(e.at+i)%exactGaps]) - g; d >= -exactSlack && d <= exactSlack {
			rep = true
			break
		}
	}
	if !rep {
		if e.freshTotal >= exactMaxGaps {
			e.freshTotal = 0
			for b := range learned.Bins() {
				e.fresh[b] /= 2
				e.freshTotal += int(e.fresh[b])
			}
		}
		e.fresh[learned.BinOf(g)]++
		e.freshTotal++
	}
	i := (e.at + e.n) % exactGaps
	e.length[i], e.repeat[i] = uint16(g), rep
	if e.n < exactGaps {
		e.n++
	} else {
		e.at = (e.at + 1) % exactGaps
	}
}

// Keep returns the idle seconds worth a replica for the next gap, for a
// cold start worth cost replica-seconds.
func (e *exact) Keep(cost float64) []decider.KeepRange {
	n := e.n
	if n == 0 {
		return nil
	}
	vals := make([]int, 0, n)
	repeats := 0
	for i := range n {
		j := (e.at + i) % exactGaps
		vals = append(vals, int(e.length[j]))
		if e.repeat[j] {
			repeats++
		}
	}
	slices.Sort(vals)
	rho := (float64(repeats) + 0.5) / (float64(n) + 1)
	var hz [128]float64
	learned.Hazards(&e.fresh, e.freshTotal, &hz)
	bins := learned.Bins()
	var surv [129]float64
	for b := bins - 1; b >= 0; b-- {
		surv[b] = surv[b+1] + float64(e.fresh[b])
	}
	freshFrom := func(b int) float64 { return surv[b] / max(float64(e.freshTotal), 1) }
	from := func(lo int) (int, float64) { // the latest gaps at lo or more
		i, _ := slices.BinarySearch(vals, lo)
		return i, float64(n-i) / float64(n)
	}
	var ranges []decider.KeepRange
	for i, v := range vals {
		if (i > 0 && v == vals[i-1]) || v >= learned.MaxGap {
			continue
		}
		lo, hi := max(v-exactSlack, 2), v+exactSlack+1
		a, reached := from(lo)
		c, _ := slices.BinarySearch(vals, hi)
		b := learned.BinOf(int64(lo))
		ends := rho*float64(c-a)/float64(n) + (1-rho)*hz[b]*float64(hi-lo)*freshFrom(b)
		if den := rho*reached + (1-rho)*freshFrom(b); den > 0 && cost*ends/den >= float64(hi-lo) {
			ranges = append(ranges, decider.KeepRange{Lo: int64(lo), Hi: int64(hi)})
		}
	}
	for b := range bins - 1 {
		_, reached := from(int(learned.BinEdge(b)))
		if den := rho*reached + (1-rho)*freshFrom(b); hz[b] > 0 && den > 0 && cost*(1-rho)*hz[b]*freshFrom(b)/den >= 1 {
			ranges = append(ranges, decider.KeepRange{Lo: learned.BinEdge(b), Hi: learned.BinEdge(b + 1)})
		}
	}
	return merge(ranges)
}

// merge sorts ranges and joins those that overlap or touch, as Comparison
// wants them.
func merge(rs []decider.KeepRange) []decider.KeepRange {
	slices.SortFunc(rs, func(x, y decider.KeepRange) int { return int(x.Lo - y.Lo) })
	out := rs[:0]
	for _, r := range rs {
		if k := len(out) - 1; k >= 0 && r.Lo <= out[k].Hi {
			out[k].Hi = max(out[k].Hi, r.Hi)
			continue
		}
		out = append(out, r)
	}
	return out
}
