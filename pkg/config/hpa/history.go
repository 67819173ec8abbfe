package hpa

import (
	"time"

	"ebb.dev/ebb/pkg/behavior"
)

// History is the memory Kubernetes' HPA controller keeps per autoscaler: the
// unstabilized recommendations of past decisions and the scale events of
// past rescales. Like Kubernetes' it lives in memory only; a new History
// starts as a restarted controller does, seeded with the current count, so
// it cannot scale down for one scale-down window.
//
// It is not safe for concurrent use. It has one owner, the decider goroutine
// of one revision, which calls Normalize once per decision and RecordScale
// after each applied rescale. The zero value is ready to use. It is
// behavior.History on Kubernetes' types; see there for the bounds on its
// memory.
type History struct {
	h behavior.History
}

// Seed is recordInitialRecommendation: on the first decision about an
// autoscaler, before any metric is read, current is stored as a
// recommendation at now. Later calls do nothing. Normalize seeds by itself;
// call Seed directly on decisions that end before normalization (every
// metric blind) so that the seed carries the same time as in Kubernetes.
func (h *History) Seed(now time.Time, current int32) { h.h.Seed(now, current) }

// Normalize runs NormalizeBehavior on in with the history filled in
// (in.Recommendations, in.ScaleUps and in.ScaleDowns are replaced), then
// stores in.Desired as a recommendation at in.Now, as Kubernetes does on
// every decision that reaches normalization (not when Current is outside
// [Min, Max] or scaling is disabled).
func (h *History) Normalize(in BehaviorInput) BehaviorResult {
	return resultOf(h.h.Normalize(inputOf(in)))
}

// RecordScale is storeScaleEvent: call it once a rescale from -> to has been
// applied, with the time of the decision. A scale-up is stored as an event
// of to-from added replicas, a scale-down as from-to removed ones. Nothing
// is stored when from == to or when the latest Normalize had no behavior
// (the legacy path keeps no events).
func (h *History) RecordScale(at time.Time, from, to int32) { h.h.RecordScale(at, from, to) }

// Snapshot returns copies of the stored recommendations and scale events,
// oldest first, for inspection (tests, explain output).
func (h *History) Snapshot() (recommendations []Recommendation, scaleUps, scaleDowns []ScaleEvent) {
	recs, ups, downs := h.h.Snapshot()
	return convertSlice(recs, func(r behavior.Recommendation) Recommendation { return Recommendation(r) }),
		convertSlice(ups, fromEvent), convertSlice(downs, fromEvent)
}
