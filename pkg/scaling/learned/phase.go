package learned

import (
	"math"
	"slices"
)

// The second of the minute. Work that runs on a schedule (a cron job, a
// timer trigger, a batch that a scheduler starts) comes back at a whole
// minute plus a fixed delay, so the requests that end a revision's long
// idle gaps fall on few seconds of the minute, whatever the gaps' lengths.
// A bin of idle time 10% wide spans many minutes when it is long: keeping
// a replica through all of it for a request that can only come at one
// second of each minute spends 59 of every 60 seconds for nothing. So the
// policy keeps the second of the minute at which each of the latest
// phaseGaps long gaps ended (their phase), and PredictorPhase spreads a
// long bin's hazard over the seconds of the minute in proportion to the
// phases' shares. Two models compete for those phases:
//
//   - scheduled: each second of the minute has its own share, drawn from
//     a Dirichlet prior worth phasePrior gaps spread over the minute, so
//     the posterior share of phase p is
//     (long gaps that ended at p + phasePrior/60) / (long gaps + phasePrior);
//   - random: every second alike, 1/60.
//
// Each phase's share is the two models' mixture, weighted by the
// posterior odds of the first (even odds before any gap; the
// Dirichlet-multinomial's likelihood of the phases seen against 60^-n):
// a revision whose long gaps all ended at second 30 is scheduled past
// doubt after three of them; one whose 32 gaps ended at 32 different
// seconds is random just as surely, and loses nothing. A second of the bin
// whose phase is p is worth a replica when
//
//	cost × cold requests per gap × hazard × 60 × share of p >= 1,
//
// which is the bin's own rule (cost × cold requests × hazard >= 1) when
// every share is 1/60: a revision whose requests come at second 30 of a
// minute is kept only around second 30 of each minute (and from a hazard
// 60 times lower), one whose requests come at random seconds as before.

const (
	// PhaseMinGap is the shortest gap (seconds) whose phase is kept and the
	// shortest idle time that phases thin out: half a minute, the gap
	// between the runs of a schedule that fires twice a minute.
	PhaseMinGap = 30
	// phaseGaps is how many of the latest long gaps' phases are kept.
	phaseGaps = 32
	// phasePrior is the weight, in gaps, of the even spread over the
	// seconds of the minute in each phase's share.
	phasePrior = 1.0
	// everyPhase is a keepPhases value: every second of the minute.
	everyPhase = 60
)

// phaseOf is the second of the minute of unix second sec.
func phaseOf(sec int64) uint8 { return uint8((sec%60 + 60) % 60) }

// pushPhase appends the phase of a long gap's end to the ring, dropping
// the oldest when it is full.
func (h *idleGaps) pushPhase(phase uint8) {
	h.phases[(int(h.phaseAt)+int(h.phaseN))%phaseGaps] = phase
	if h.phaseN < phaseGaps {
		h.phaseN++
	} else {
		h.phaseAt = uint8((int(h.phaseAt) + 1) % phaseGaps)
	}
}

// phaseCounts returns the long gaps that ended at each second of the
// minute.
func (h *idleGaps) phaseCounts() (c [60]int) {
	for i := range int(h.phaseN) {
		c[h.phases[(int(h.phaseAt)+i)%phaseGaps]]++
	}
	return c
}

// rankPhases sets phaseRank (the seconds of the minute by the long gaps
// that ended at them, the most first, the earlier second first among
// equals) and returns the shares of the phases in rank order.
func (h *idleGaps) rankPhases() (share [60]float64) {
	c := h.phaseCounts()
	var order [60]uint8
	for p := range order {
		order[p] = uint8(p)
	}
	slices.SortStableFunc(order[:], func(a, b uint8) int { return c[b] - c[a] })
	n := float64(h.phaseN)
	w := scheduledOdds(&c, n)
	for r, p := range order {
		h.phaseRank[p] = uint8(r)
		share[r] = w*(float64(c[p])+phasePrior/60)/(n+phasePrior) + (1-w)/60
	}
	return share
}

// scheduledOdds is the posterior probability that phases with counts c
// (n in all) were drawn from shares of their own (a Dirichlet prior
// worth phasePrior gaps) rather than from every second alike, at even
// prior odds.
func scheduledOdds(c *[60]int, n float64) float64 {
	a := phasePrior / 60
	lg := func(x float64) float64 { v, _ := math.Lgamma(x); return v }
	logScheduled := lg(phasePrior) - lg(n+phasePrior)
	for _, k := range c {
		if k > 0 {
			logScheduled += lg(float64(k)+a) - lg(a)
		}
	}
	logRandom := -n * math.Log(60)
	return 1 / (1 + math.Exp(logRandom-logScheduled))
}

// phasesWorth is the keepPhases value of a long bin whose cost ×
// hazard is v: how many seconds of the minute, the best ranked first, are
// worth a replica (everyPhase when all of them are).
func phasesWorth(v float64, share *[60]float64) uint8 {
	n := 0
	for n < 60 && 60*v*share[n] >= 1 {
		n++
	}
	return uint8(n)
}

// phaseEvidence returns what a replica kept for the second of idle time
// sec (a long bin kept at some seconds only) stands on: the long gaps
// that ended at that second of the minute, and all of them.
func (h *idleGaps) phaseEvidence(sec int64) (ended, long int) {
	return h.phaseCounts()[phaseOf(h.lastBusy+sec)], int(h.phaseN)
}
