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
// of one revision, which calls Normalize once per decision and RecordScale
// after each applied rescale. The zero value is ready to use.
//
// Memory is bounded: every Normalize drops the recommendations older than
// the longest stabilization window in force and the events older than the
// longest policy period in force, so a History holds at most about
// window / decision interval recommendations (1800 for 1 h at 2 s). The
// slices are reused, so a History does not allocate once they have grown.
// Pruning by the windows in force is the one difference from Kubernetes,
// which overwrites at most one stale entry per decision: after a behavior
// change that lengthens a window, entries the old window had already
// released do not come back.
type History struct {
	seeded          bool // Seed ran: the first sight of the autoscaler is behind us
	legacy          bool // the latest Normalize had no behavior: RecordScale stores nothing
	recommendations []Recommendation
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
	h.recommendations = append(h.recommendations, Recommendation{At: now, Replicas: current})
}

// Normalize runs Normalize on in with the history filled in
// (in.Recommendations, in.ScaleUps and in.ScaleDowns are replaced), then
// stores in.Desired as a recommendation at in.Now, as Kubernetes does on
// every decision that reaches normalization (not when Current is outside
// [Min, Max] or scaling is disabled).
func (h *History) Normalize(in Input) Result {
	h.Seed(in.Now, in.Current)
	h.legacy = in.Behavior == nil
	h.prune(in.Now, in.Behavior)
	in.Recommendations, in.ScaleUps, in.ScaleDowns = h.recommendations, h.scaleUps, h.scaleDowns
	res := Normalize(in)
	if InBounds(in) {
		h.recommendations = append(h.recommendations, Recommendation{At: in.Now, Replicas: in.Desired})
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
	return slices.Clone(h.recommendations), slices.Clone(h.scaleUps), slices.Clone(h.scaleDowns)
}

// prune drops what can no longer matter at now. b nil is the legacy path,
// whose window is LegacyDownscaleStabilization and which reads no events
// (they are kept up to MaxPeriodSeconds, the longest period a behavior set
// later can have).
func (h *History) prune(now time.Time, b *Behavior) {
	recHorizon, eventHorizon := LegacyDownscaleStabilization, seconds(MaxPeriodSeconds)
	if b != nil {
		up, down := effectiveUp(b), effectiveDown(b)
		recHorizon = max(up.window, down.window)
		eventHorizon = max(up.longestPeriod(), down.longestPeriod())
	}
	// The legacy window is inclusive: keep a recommendation exactly as old
	// as the horizon. Events are strict: one exactly a period old is out.
	recCutoff, eventCutoff := now.Add(-recHorizon), now.Add(-eventHorizon)
	h.recommendations = slices.DeleteFunc(h.recommendations, func(r Recommendation) bool { return r.At.Before(recCutoff) })
	h.scaleUps = slices.DeleteFunc(h.scaleUps, func(e ScaleEvent) bool { return !e.At.After(eventCutoff) })
	h.scaleDowns = slices.DeleteFunc(h.scaleDowns, func(e ScaleEvent) bool { return !e.At.After(eventCutoff) })
}
