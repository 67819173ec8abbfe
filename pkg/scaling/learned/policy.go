package learned

import (
	"time"

	"ebb.dev/ebb/pkg/config"
)

// The learned scale-to-zero policy (config.ScaleToZeroLearned) learns the
// revision's idle gaps: the seconds between two seconds with load, when at
// least one second without load lies between them (gaps.go keeps
// them). It then decides, for every stretch of idle time, whether a
// replica is worth having then: a replica kept (or pre-warmed) through the
// bin [lo, hi) of idle time costs (hi - lo) replica-seconds for every gap
// that lasts that long, and saves the cold starts of every gap that ends
// there. So the bin is worth a replica when its hazard (the gaps that end
// in it for each second of idle time spent in it) pays for the replica:
//
//	cold-start-cost × cold requests per gap × hazard >= 1.
//
// This is the hybrid histogram policy of Shahrad et al. ("Serverless in the
// Wild", USENIX ATC '20: pre-warm and keep-alive windows from the head and
// the tail of each application's idle-time histogram) with its two
// percentile cut-offs replaced by that one trade-off, applied to each bin:
// a revision whose gaps cluster (timers, batches) is released right after
// its traffic and pre-warmed ahead of the cluster; one whose gaps spread
// is kept only where the gaps are dense enough to pay for it.
//
// The hazard is the predictor's (predict.go). The policy's own,
// PredictorSequence, reads the order of the gaps: the next gap is
// predicted from the latest gaps that followed a gap in the same bin as
// the last one (a transition table over the latest recentGaps gaps), and
// where those are few, from every gap: each bin's hazard from the whole
// history is the prior, worth a third of a gap, of the hazard from the
// gaps that followed a like gap. The whole history's hazard is itself
// estimated with a Gamma prior centred on the hazard of the bin's
// neighbourhood (the bins within a factor of sqrt(2) of it), worth half a
// gap, since a day holds few long gaps and a bin 10% wide that none of
// them happened to end in says little about the next one:
//
//	hazard = (ended in the bin + prior weight) /
//	         (exposure of the bin + prior weight / prior hazard)
//
// where a bin's exposure is its width times the gaps that reached it. A
// cold start is counted once for each request that would find no replica:
// the requests of a gap's first two seconds, averaged over the latest
// gaps, so that a revision whose traffic comes back in bursts is kept
// ready where one that gets a single request is not. On the Azure
// Functions 2019 development sample, docs/whatif.md compares this
// predictor with the others of predict.go.
//
// With parking (config.Parking), a replica need not be awake to spare a
// cold start: a parked one wakes in milliseconds and a parked second costs
// parked-cost of an awake one. The same trade-off then keeps a parked
// replica wherever
//
//	cold-start-cost × cold requests per gap × hazard >= parked-cost,
//
// a threshold parked-cost times lower, so the policy keeps it parked
// through every stretch of idle time whose gaps end often enough to pay
// for parked seconds, and releases it to zero only where even those cost
// more than the cold starts they spare (the decider parks what the policy
// keeps: pkg/scaling/decider/park.go). Nothing in it is tuned to a trace:
// the threshold is the cost model's.
//
// Memory is bounded: the histogram's counters of 16 bits, halved whenever
// they hold maxGaps gaps, and the latest recentGaps gaps' bins and hours:
// under 1 KiB per revision.

// Policy is the learned policy of one decider.
type Policy struct {
	gaps      idleGaps
	predictor *predictorParams
	cost      float64 // seconds
	// park is the revision's parked-cost (0 when parking is off) and
	// max-parked-duration: the keep bits of a parked replica are computed
	// at them.
	park parking
	// lead is the revision's prewarm-lead in seconds, -1 when the policy
	// learns it from starts (lead.go); tick is the tick interval
	// in seconds.
	lead, tick int64
	starts     startups
	dirty      bool // gaps changed since the keep bits were computed
	// generation counts the gaps added: it changes whenever the state
	// worth saving does (State).
	generation uint64
	// restored is set while the history holds gaps restored from an
	// earlier decider (Restore) and fewer than MinGaps of its own
	// (sinceRestore); the reasons then say so.
	restored     bool
	sinceRestore int
	// coldPerGap is the requests that would start cold when a gap ends
	// with no replica: the requests of a gap's first two seconds (at
	// least 1), averaged over the gaps with weight coldPerGapWeight for
	// the latest. burstSec is the second the latest gap ended (0 once its
	// two seconds are counted into coldPerGap), burstReq their requests.
	coldPerGap float64
	burstSec   int64
	burstReq   float64
}

// coldPerGapWeight is the weight of the latest gap in coldPerGap: about
// the last 20 gaps count.
const coldPerGapWeight = 0.1

// New returns the learned policy of a revision; nil when its
// scale-to-zero policy is another.
func New(rev *config.Revision) *Policy {
	if rev.ScaleToZeroPolicy != config.ScaleToZeroLearned {
		return nil
	}
	p := &Policy{predictor: &predictorTable[PredictorPhase], cost: rev.ColdStartCost.Seconds(),
		lead: newLead(rev), tick: max(int64(rev.TickInterval/time.Second), 1), coldPerGap: 1}
	if rev.Parking.Enabled {
		p.park = parking{cost: rev.Parking.Cost, max: int64(rev.Parking.MaxDuration / time.Second)}
	}
	return p
}

// UsePredictor makes the policy predict with p from now on (it keeps its
// history). The policy's own is PredictorPhase; the others are there to
// compare it with.
func (l *Policy) UsePredictor(p Predictor) {
	if p >= predictorCount || predictorTable[p].comparison {
		return // a Comparison's (UseComparison)
	}
	l.predictor, l.dirty = &predictorTable[p], true
}

// Observe takes one second's revision-wide averages.
func (p *Policy) Observe(now time.Time, concurrency, rps float64) {
	sec := now.Unix()
	if p.burstSec != 0 && sec > p.burstSec+1 {
		p.coldPerGap += coldPerGapWeight * (min(max(p.burstReq, 1), maxColdPerGap) - p.coldPerGap)
		p.burstSec = 0
	}
	if p.burstSec != 0 {
		p.burstReq += rps
	}
	if p.gaps.observe(now, concurrency > 0 || rps > 0) {
		p.burstSec, p.burstReq = sec, rps
		p.dirty = true
		p.generation++
		if p.sinceRestore++; p.sinceRestore >= MinGaps {
			p.restored = false
		}
	}
}

// coldCost is what a gap that ends with no replica costs, in replica-seconds.
func (p *Policy) coldCost() float64 {
	if p.predictor.perRequest {
		return p.cost * p.coldPerGap
	}
	return p.cost
}

// Kind is the kind of a Verdict.
type Kind uint8

// Kinds of Verdict; the decider's reasons of the same names say them.
const (
	// None: nothing to say (load now, or a replica ready before the
	// activator is in the path); Knative's rules decide.
	None Kind = iota
	// Fallback: too few idle gaps seen yet (A of B); Knative's rules decide.
	Fallback
	// KeepAlive: a replica kept for the idle time A seconds ahead.
	KeepAlive
	// PreWarm: a replica started for the idle time A seconds ahead.
	PreWarm
	// Release: no replica worth having within the lead; A is the idle
	// time left before the next second worth one (-1: none).
	Release
)

// Verdict is what Decide says, with the numbers of its reason.
type Verdict struct {
	Kind    Kind
	A, B, C float64
	Detail  string
}

// Decide decides the scale at now of a revision whose bounded
// recommendation is 0 or 1 and that may scale to zero, given its ready
// replicas, whether it runs one (running), whether the activator is
// in its path and whether the replica it keeps would be parked (parked:
// parking is on and the platform may park it; the bins worth a replica
// are then those worth a parked one): a replica when the idle time from now to now+lead reaches
// a bin worth one (PreWarm when none is ready, KeepAlive otherwise), none
// otherwise (Release). It returns false to leave the decision to
// Knative's rules: with too little history (Fallback), while the revision
// has load, and while a replica is ready but the activator is not in the
// path yet (Knative's grace period moves it there first).
func (p *Policy) Decide(now time.Time, ready int32, running, activator, parked bool) (Verdict, int32, bool) {
	g := &p.gaps
	idle := now.Unix() - g.lastBusy
	if !g.seen || idle < 1 {
		return Verdict{}, 0, false // load now: Knative's rules, nothing to say
	}
	if g.total < MinGaps {
		return Verdict{Kind: Fallback, A: float64(g.total), B: MinGaps, Detail: p.detail(detailWhole)}, 0, false
	}
	if p.dirty {
		g.recompute(p.predictor, p.coldCost(), p.park, hourOf(now.Unix()))
		p.dirty = false
	}
	// A replica that runs is kept when the next range worth one starts
	// within two leads: releasing it only to start it again moments later
	// saves nothing and risks the request.
	lead := p.Lead()
	ahead := lead
	if running {
		ahead = 2 * lead
	}
	from, to := max(idle, 2), idle+ahead
	parked = parked && p.park.cost > 0
	if sec, b, ok := g.keptIn(from, to, parked); ok {
		kind := KeepAlive
		if ready == 0 { // (running is true by the reconcile's second pass)
			kind = PreWarm
		}
		return p.keepReason(kind, b, sec, idle, parked), 1, true
	}
	if ready > 0 && !activator {
		return Verdict{}, 0, false
	}
	next := -1.0
	if sec, _, ok := g.keptIn(to+1, maxGap-1, parked); ok {
		next = float64(sec - idle)
	}
	// A release's numbers say how much history there is: the whole of it
	// (the next second worth a replica, A, is the predictor's).
	return Verdict{Kind: Release, A: next, B: float64(g.survivors(gapBin(from))), C: float64(g.total), Detail: p.detail(detailWhole)}, 0, true
}

// IdleSeconds is the revision's idle time at now: the seconds since its
// last second with load (0 before any).
func (p *Policy) IdleSeconds(now time.Time) int64 {
	if !p.gaps.seen {
		return 0
	}
	return max(now.Unix()-p.gaps.lastBusy, 0)
}

// MinGap is the shortest idle gap the policy learns, in seconds: one
// whole second with no load between two with load.
const MinGap = 2

// Decided takes the scale the decider decided at second sec (desired)
// and the ready replicas then, for the policy's measure of start-ups.
func (p *Policy) Decided(sec int64, ready, desired int32) {
	if p.lead < 0 {
		p.starts.decided(sec, ready, desired)
	}
}

// keepReason is the reason of a replica kept (or pre-warmed) for the
// second sec of idle time, in bin b of the awake or parked keep bits:
// when the bin is kept at some seconds of the minute only, the long gaps that ended at sec's; else the gaps
// that reached the bin.
func (p *Policy) keepReason(kind Kind, b int, sec, idle int64, parked bool) Verdict {
	r := Verdict{Kind: kind, A: float64(max(sec-idle, 0))}
	if parked && p.gaps.keepPhases[b] == 0 { // worth a parked replica only
		ended, lasted := p.gaps.endedNear(b), p.gaps.survivors(b)
		r.B, r.C, r.Detail = float64(ended), float64(lasted), DetailParked
		return r
	}
	if m := p.gaps.bits(parked)[b]; m > 0 && m < everyPhase { // (a Comparison or PredictorExact keeps no bits)
		ended, long := p.gaps.phaseEvidence(sec)
		r.B, r.C, r.Detail = float64(ended), float64(long), p.detail(detailPhase)
		return r
	}
	ended, lasted, seq := p.evidence(b)
	r.B, r.C, r.Detail = float64(ended), float64(lasted), p.detail(detailWhole)
	if seq {
		r.Detail = p.detail(detailSequence)
	}
	return r
}

// Details of the learned policy's reasons (one at most).
const (
	// DetailRestored: the history holds gaps restored from an earlier
	// decider (Restore); the numbers are of the whole history.
	DetailRestored = "restored"
	// DetailSequence: the numbers are of the gaps that followed a gap like
	// the latest one (the transition table of PredictorPhase and
	// PredictorSequence).
	DetailSequence = "sequence"
	// DetailPhase: the numbers are of the latest long gaps and those that
	// ended at the second of the minute the replica is kept for
	// (phase.go).
	DetailPhase = "phase"
	// DetailPhaseRestored: DetailPhase while the history is restored.
	DetailPhaseRestored = "phase, restored"
	// DetailParked: the range is worth a parked replica only (parking
	// on): the parked time the rest of the gap is expected to take costs
	// less than the cold start it spares; the numbers are of the whole
	// history.
	DetailParked = "parked"
)

// What a reason's numbers are of.
const (
	detailWhole = iota
	detailSequence
	detailPhase
)

func (p *Policy) detail(of int) string {
	switch {
	case of == detailPhase && p.restored:
		return DetailPhaseRestored
	case of == detailPhase:
		return DetailPhase
	case p.restored:
		return DetailRestored
	case of == detailSequence:
		return DetailSequence
	}
	return ""
}

// sequenceCounts sets m to the latest gaps that followed a gap like the
// latest one, by bin, and returns their number; 0 when the predictor
// does not read the order of gaps, or while the history is restored (the
// reasons then say so, with the numbers of the whole history).
func (p *Policy) sequenceCounts(m *[128]float64) int {
	if !p.predictor.recent || p.predictor.prevBins < 0 || p.restored {
		return 0
	}
	seq := predictorParams{prevBins: p.predictor.prevBins, todHours: -1}
	return int(p.gaps.recentCounts(&seq, 0, m))
}

// evidence returns what a kept bin b stands on: of the gaps that lasted
// into it, those that ended before its neighbourhood does; of the gaps
// that followed a gap like the latest one when some of them lasted that
// long (seq), else of the whole history.
func (p *Policy) evidence(b int) (ended, lasted int, seq bool) {
	var m [128]float64
	if p.sequenceCounts(&m) > 0 {
		for x := b; x < gapBins; x++ {
			lasted += int(m[x])
			if x < int(gapNear[b][1]) {
				ended += int(m[x])
			}
		}
		if lasted > 0 {
			return ended, lasted, true
		}
	}
	return p.gaps.endedNear(b), p.gaps.survivors(b), false
}

// CloneInto copies the policy into dst (a new one when nil) and returns
// it: values only (arrays and numbers), and the shared predictor.
func (p *Policy) CloneInto(dst *Policy) *Policy {
	if dst == nil {
		dst = new(Policy)
	}
	*dst = *p
	return dst
}
