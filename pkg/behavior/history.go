package behavior

import (
	"slices"
	"time"
)

// History is the memory Kubernetes' HPA controller keeps per autoscaler: the
// unstabilized recommendations of past decisions and the scale events of
// past rescales. Like Kubernetes' it lives in memory only; a new History
// starts as a restarted controller does, seeded with the current count, so
// it cannot scale down for one scale-down window.
//
// It is not safe for concurrent use. It has one owner, the decider goroutine
// of one revision, which calls Normalize once per decision, with a Now that
// never goes back, and RecordScale after each applied rescale. The zero
// value is ready to use.
//
// Memory is bounded: every Normalize drops the recommendations older than
// the longest stabilization window in force and the events older than the
// longest policy period in force, so a History holds at most about
// window / decision interval recommendations (1800 for 1 h at 2 s). Pruning
// by the windows in force is the one difference from Kubernetes, which
// overwrites at most one stale entry per decision: after a behavior change
// that lengthens a window, entries the old window had already released do
// not come back.
//
// Cost: a decision takes O(log n) for stabilization (the windows' extremes
// come from an index, see recIndex) and does not allocate once the queues
// have grown, which keeps the KPA tick with a behavior allocation-free.
type History struct {
	seeded          bool // Seed ran: the first sight of the autoscaler is behind us
	legacy          bool // the latest Normalize had no behavior: RecordScale stores nothing
	recommendations queue[Recommendation]
	index           recIndex
	scaleUps        []ScaleEvent
	scaleDowns      []ScaleEvent
}

// Seed is recordInitialRecommendation: on the first decision about an
// autoscaler, before any metric is read, current is stored as a
// recommendation at now. Later calls do nothing. Normalize seeds by itself;
// call Seed directly on decisions that end before normalization (every
// metric blind) so that the seed carries the same time as in Kubernetes.
func (h *History) Seed(now time.Time, current int32) {
	if h.seeded {
		return
	}
	h.seeded = true
	h.store(Recommendation{At: now, Replicas: current})
}

func (h *History) store(r Recommendation) {
	h.recommendations.push(r)
	h.index.push(r)
}

// Normalize runs Normalize on in with the history filled in
// (in.Recommendations, in.ScaleUps and in.ScaleDowns are replaced), then
// stores in.Desired as a recommendation at in.Now, as Kubernetes does on
// every decision that reaches normalization (not when Current is outside
// [Min, Max] or scaling is disabled).
func (h *History) Normalize(in Input) Result {
	h.Seed(in.Now, in.Current)
	h.legacy = in.Behavior == nil
	var up, down effective
	if in.Behavior != nil {
		up, down = effectiveUp(in.Behavior), effectiveDown(in.Behavior)
	}
	h.prune(in.Now, in.legacyWindow(), up, down)
	recs := h.recommendations.live()
	in.Recommendations, in.ScaleUps, in.ScaleDowns = recs, h.scaleUps, h.scaleDowns
	in.index = &h.index
	if len(recs) > 0 && recs[len(recs)-1].At.After(in.Now) {
		in.index = nil // Now went back: the index assumes time order, the scan does not
	}
	res := normalize(in, up, down)
	if inBounds(in) {
		h.store(Recommendation{At: in.Now, Replicas: in.Desired})
	}
	return res
}

// RecordScale is storeScaleEvent: call it once a rescale from -> to has been
// applied, with the time of the decision. A scale-up is stored as an event
// of to-from added replicas, a scale-down as from-to removed ones. Nothing
// is stored when from == to or when the latest Normalize had no behavior
// (the legacy path keeps no events).
func (h *History) RecordScale(at time.Time, from, to int32) {
	switch {
	case h.legacy || from == to:
		return
	case to > from:
		h.scaleUps = append(h.scaleUps, ScaleEvent{At: at, Change: to - from})
	default:
		h.scaleDowns = append(h.scaleDowns, ScaleEvent{At: at, Change: from - to})
	}
}

// Snapshot returns copies of the stored recommendations and scale events,
// oldest first, for inspection (tests, explain output).
func (h *History) Snapshot() (recommendations []Recommendation, scaleUps, scaleDowns []ScaleEvent) {
	return slices.Clone(h.recommendations.live()), slices.Clone(h.scaleUps), slices.Clone(h.scaleDowns)
}

// prune drops what can no longer matter at now, with the behavior's
// resolved rules. On the legacy path (h.legacy) the window is
// legacyWindow and no events are read (they are kept up to
// MaxPeriodSeconds, the longest period a behavior set later can have).
func (h *History) prune(now time.Time, legacyWindow time.Duration, up, down effective) {
	recHorizon, eventHorizon := legacyWindow, seconds(MaxPeriodSeconds)
	if !h.legacy {
		recHorizon = max(up.window, down.window)
		eventHorizon = max(up.longestPeriod(), down.longestPeriod())
	}
	// The legacy window is inclusive: keep a recommendation exactly as old
	// as the horizon. Events are strict: one exactly a period old is out.
	recCutoff, eventCutoff := now.Add(-recHorizon), now.Add(-eventHorizon)
	for !h.recommendations.empty() && h.recommendations.front().At.Before(recCutoff) {
		h.recommendations.popFront()
	}
	h.index.dropBefore(recCutoff)
	h.scaleUps = dropEvents(h.scaleUps, eventCutoff)
	h.scaleDowns = dropEvents(h.scaleDowns, eventCutoff)
}

// dropEvents removes the events not after cutoff, in place.
func dropEvents(events []ScaleEvent, cutoff time.Time) []ScaleEvent {
	n := 0
	for _, e := range events {
		if e.At.After(cutoff) {
			events[n] = e
			n++
		}
	}
	return events[:n]
}

// Clone returns a copy of h that shares nothing with it.
func (h *History) Clone() *History {
	c := *h
	c.recommendations = h.recommendations.clone()
	c.index = recIndex{maxq: h.index.maxq.clone(), minq: h.index.minq.clone()}
	c.scaleUps = append([]ScaleEvent(nil), h.scaleUps...)
	c.scaleDowns = append([]ScaleEvent(nil), h.scaleDowns...)
	return &c
}
