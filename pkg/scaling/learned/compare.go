package learned

import "slices"

// Predictors that exist only to be compared with the policy's, and that
// the server does not run, live outside this package (pkg/scaling/whatif/compare
// holds Shahrad et al.'s hybrid histogram, PredictorHybridHistogram) and
// reach a policy as a Comparison: it sees every idle gap the policy
// counts and says, for the next gap, which ranges of idle time are worth
// a replica. The policy keeps its own history beside it (its reasons'
// numbers are of that history) and decides with the Comparison's ranges
// instead of its keep bits. A Comparison's state is not saved (State):
// whatif, which uses them, runs each function's policy once from the
// start.

// Comparison is a predictor kept to compare the policy with.
type Comparison interface {
	// Add takes an idle gap of g seconds (2 or more; longer than the
	// histogram's range too).
	Add(g int64)
	// Keep returns the ranges of idle time worth a replica for the next
	// gap, for a cold start worth cost replica-seconds, in ascending order
	// and not overlapping.
	Keep(cost float64) []Range
}

// Range is the idle seconds [Lo, Hi).
type Range struct{ Lo, Hi int64 }

// comparison is a Comparison in use, with its latest ranges.
type comparison struct {
	c      Comparison
	ranges []Range
}

func (c *comparison) recompute(cost float64) { c.ranges = c.c.Keep(cost) }

// keptIn returns the first second within [from, to] the ranges keep, with
// the policy's bin of it for the reasons.
func (c *comparison) keptIn(from, to int64) (sec int64, bin int, ok bool) {
	i, _ := slices.BinarySearchFunc(c.ranges, from, func(r Range, s int64) int {
		switch {
		case r.Hi <= s:
			return -1
		case r.Lo > s:
			return 1
		}
		return 0
	})
	if i == len(c.ranges) {
		return 0, -1, false
	}
	sec = max(from, c.ranges[i].Lo)
	if sec > to || sec >= c.ranges[i].Hi || sec >= maxGap {
		return 0, -1, false
	}
	return sec, gapBin(sec), true
}

// UseComparison makes the policy decide with c's ranges from now on (nil:
// with its predictor again). c sees the gaps from then on only.
func (p *Policy) UseComparison(c Comparison) {
	p.gaps.cmp, p.dirty = nil, true
	if c != nil {
		p.gaps.cmp = &comparison{c: c}
	}
}
