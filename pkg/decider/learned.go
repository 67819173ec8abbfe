package decider

import (
	"math"
	"time"

	"ebb.dev/ebb/pkg/config"
)

// The learned scale-to-zero policy (config.ScaleToZeroLearned) keeps a
// histogram of the revision's idle gaps: the seconds between two seconds
// with load, when at least one second without load lies between them. It
// then decides, for every stretch of idle time, whether a replica is worth
// having then: a replica kept (or pre-warmed) through the bin [lo, hi) of
// idle time costs (hi - lo) replica-seconds for every gap that lasts that
// long, and saves a cold start for every gap that ends there. So the bin is
// worth a replica when its hazard (the gaps that end in it for each second
// of idle time spent in it) pays for the replica:
//
//	cold-start-cost × hazard >= 1.
//
// This is the hybrid histogram policy of Shahrad et al. ("Serverless in the
// Wild", USENIX ATC '20: pre-warm and keep-alive windows from the head and
// the tail of each application's idle-time histogram) with its two
// percentile cut-offs replaced by that one trade-off, applied to each bin:
// a revision whose gaps cluster (timers, batches) is released right after
// its traffic and pre-warmed ahead of the cluster; one whose gaps spread
// is kept only where the gaps are dense enough to pay for it.
//
// A day holds few long gaps, and a bin 10% wide that none of them happened
// to end in says little about the next one. So a bin's hazard is not the
// bare ratio of its own counts: it is estimated with a Gamma prior centred
// on the hazard of its neighbourhood (the bins within a factor of sqrt(2)
// of it), worth hazardPrior gaps:
//
//	hazard = (ended in the bin + hazardPrior) /
//	         (exposure of the bin + hazardPrior / hazard of the neighbourhood)
//
// where a bin's exposure is its width times the gaps that reached it. A
// bin with much history of its own (a timer's empty bins just before its
// period) keeps its own hazard; a sparse one borrows its neighbours'. On
// the Azure Functions 2019 development sample this cuts the idle replica
// time at a given number of cold starts by about a tenth (docs/whatif.md).
//
// Memory is bounded: gapBins counters of 16 bits, halved whenever they
// hold maxGaps gaps, so old behaviour fades as new gaps arrive.

const (
	// LearnedMinGaps is the history the policy needs before it overrides
	// Knative's behaviour.
	LearnedMinGaps = 5
	// maxGaps is the count at which every bin is halved.
	maxGaps = 2000
	// maxGap is where the last bin starts: gaps of 4 hours or more are
	// counted but never kept for (Shahrad et al.'s histogram range).
	maxGap = 4 * 60 * 60
	// hazardPrior is the weight, in gaps, of the neighbourhood's hazard in
	// a bin's: half a gap, so that one gap of the bin's own outweighs it.
	hazardPrior = 0.5
	// nearFactor bounds a bin's neighbourhood: the bins whose lower edge
	// lies within [lo/nearFactor, lo*nearFactor).
	nearFactor = math.Sqrt2
)

// gapEdges are the lower edges of the bins, in seconds: one second wide up
// to 10 s, then about 10% wide (a margin of 10% as in Shahrad et al.), up to
// maxGap, which starts the last, unbounded bin.
var gapEdges = func() []int64 {
	edges := []int64{2}
	for e := int64(2); e < maxGap; {
		e = max(e+1, int64(math.Ceil(float64(e)*1.1)))
		edges = append(edges, min(e, maxGap))
	}
	return edges
}()

// gapBins is the number of bins (at most 128: the keep set is 2 words).
var gapBins = len(gapEdges)

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

// idleGaps is the learned policy's state: one per revision, owned by its
// decider.
type idleGaps struct {
	counts   [128]uint16
	total    int
	lastBusy int64 // unix second of the last second with load
	seen     bool  // a second with load was seen
	// keep has bit b set when bin b is worth a replica (recomputed when a
	// gap is added).
	keep [2]uint64
}

// bin returns the bin of an idle gap (or idle time) of g seconds, g >= 2.
func gapBin(g int64) int {
	lo, hi := 0, gapBins-1
	for lo < hi { // the last edge <= g
		mid := (lo + hi + 1) / 2
		if gapEdges[mid] <= g {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// observe takes one second with data, busy when it had load, and reports
// whether it ended a gap.
func (h *idleGaps) observe(now time.Time, busy bool) bool {
	if !busy {
		return false
	}
	sec := now.Unix()
	added := h.seen && sec-h.lastBusy >= 2
	if added {
		h.add(sec - h.lastBusy)
	}
	if !h.seen || sec > h.lastBusy {
		h.lastBusy, h.seen = sec, true
	}
	return added
}

func (h *idleGaps) add(g int64) {
	if h.total >= maxGaps {
		h.total = 0
		for b := range gapBins {
			h.counts[b] /= 2
			h.total += int(h.counts[b])
		}
	}
	h.counts[gapBin(g)]++
	h.total++
}

// recompute sets the keep bits for a cold start worth cost seconds: bin b
// is kept when cost × hazard(b) >= 1, with the hazard of the package
// comment. In exposure terms (no division by an empty bin):
//
//	cost × (ended + hazardPrior) >= exposure + hazardPrior × nearExposure / nearEnded.
func (h *idleGaps) recompute(cost float64) {
	h.keep = [2]uint64{}
	// Prefix sums over the bins below b: the gaps that ended there, and
	// their exposure. total - ended[b] gaps reached bin b.
	var ended, exposure [129]float64
	n, total := gapBins-1, float64(h.total)
	for b := range n {
		ended[b+1] = ended[b] + float64(h.counts[b])
		exposure[b+1] = exposure[b] + float64(gapEdges[b+1]-gapEdges[b])*(total-ended[b])
	}
	for b := range n {
		from, to := int(gapNear[b][0]), int(gapNear[b][1])
		nearEnded := ended[to] - ended[from]
		if total == ended[b] || nearEnded == 0 {
			continue // no gap lasted this long, or none ended near it
		}
		nearExposure := exposure[to] - exposure[from]
		own := exposure[b+1] - exposure[b]
		if cost*(float64(h.counts[b])+hazardPrior) >= own+hazardPrior*nearExposure/nearEnded {
			h.keep[b/64] |= 1 << (b % 64)
		}
	}
}

// endedNear is the number of gaps that reached bin b and ended before its
// neighbourhood does (the evidence a kept bin stands on).
func (h *idleGaps) endedNear(b int) int { return h.survivors(b) - h.survivors(int(gapNear[b][1])) }

func (h *idleGaps) kept(b int) bool { return h.keep[b/64]&(1<<(b%64)) != 0 }

// worthFrom returns the first bin at or after b worth a replica, or -1.
func (h *idleGaps) worthFrom(b int) int {
	for ; b < gapBins-1; b++ {
		if h.kept(b) {
			return b
		}
	}
	return -1
}

// survivors is the number of gaps in bins b and above.
func (h *idleGaps) survivors(b int) int {
	n := 0
	for ; b < gapBins; b++ {
		n += int(h.counts[b])
	}
	return n
}

// learnedPolicy is the learned policy of one decider.
type learnedPolicy struct {
	gaps  idleGaps
	cost  float64 // seconds
	lead  int64   // seconds
	dirty bool    // gaps changed since the keep bits were computed
	// generation counts the gaps added: it changes whenever the state
	// worth saving does (LearnedState).
	generation uint64
	// restored is set while the history holds gaps restored from an
	// earlier decider (RestoreLearned) and fewer than LearnedMinGaps of its own
	// (sinceRestore); the reasons then say so.
	restored     bool
	sinceRestore int
}

func newLearnedPolicy(rev *config.Revision) *learnedPolicy {
	if rev.ScaleToZeroPolicy != config.ScaleToZeroLearned {
		return nil
	}
	return &learnedPolicy{cost: rev.ColdStartCost.Seconds(), lead: int64(rev.PrewarmLead / time.Second)}
}

func (p *learnedPolicy) observe(now time.Time, busy bool) {
	if p.gaps.observe(now, busy) {
		p.dirty = true
		p.generation++
		if p.sinceRestore++; p.sinceRestore >= LearnedMinGaps {
			p.restored = false
		}
	}
}

// learnedScale decides the scale of a revision whose bounded
// recommendation is 0 or 1 and that may scale to zero: a replica when the
// idle time from now to now+lead reaches a bin worth one (PreWarm when
// none is ready, KeepAlive otherwise), none otherwise (LearnedRelease). It
// returns false to leave the decision to Knative's rules: with too little
// history (LearnedFallback), while the revision has load, and while a
// replica is ready but the activator is not in the path yet (Knative's
// grace period moves it there first).
func (d *Decider) learnedScale(in Input, dec *Decision) (int32, bool) {
	p, t := d.learned, &d.target
	g := &p.gaps
	idle := in.Now.Unix() - g.lastBusy
	if !g.seen || idle < 1 {
		return 0, false // load now: Knative's rules, nothing to say
	}
	if g.total < LearnedMinGaps {
		dec.add(Reason{Code: LearnedFallback, A: float64(g.total), B: LearnedMinGaps, Detail: p.detail()})
		return 0, false
	}
	if p.dirty {
		g.recompute(p.cost)
		p.dirty = false
	}
	// A replica that runs is kept when the next range worth one starts
	// within two leads: releasing it only to start it again moments later
	// saves nothing and risks the request.
	ahead := p.lead
	if t.replicas > 0 {
		ahead = 2 * p.lead
	}
	from, to := gapBin(max(idle, 2)), gapBin(max(idle+ahead, 2))
	if b := g.worthFrom(from); b >= 0 && b <= to {
		code := KeepAlive
		if in.Ready == 0 { // (t.replicas is 1 by the reconcile's second pass)
			code = PreWarm
		}
		dec.add(Reason{Code: code, A: float64(max(gapEdges[b]-idle, 0)), B: float64(g.endedNear(b)), C: float64(g.survivors(b)), Detail: p.detail()})
		t.replicas = 1
		return 1, true
	}
	if in.Ready > 0 && !t.activator {
		return 0, false
	}
	next := -1.0
	if b := g.worthFrom(to + 1); b >= 0 {
		next = float64(gapEdges[b] - idle)
	}
	dec.add(Reason{Code: LearnedRelease, A: next, B: float64(g.survivors(from)), C: float64(g.total), Detail: p.detail()})
	t.replicas = 0
	return 0, true
}

// DetailRestored is the Detail of the learned policy's reasons while its
// history holds gaps restored from an earlier decider (RestoreLearned).
const DetailRestored = "restored"

func (p *learnedPolicy) detail() string {
	if p.restored {
		return DetailRestored
	}
	return ""
}
