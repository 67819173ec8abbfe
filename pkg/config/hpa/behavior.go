package hpa

import (
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"ebb.dev/ebb/pkg/behavior"
)

// Recommendation is a past, unstabilized recommendation (Kubernetes stores
// the prenormalized desired replica count of every decision).
type Recommendation struct {
	At       time.Time
	Replicas int32
}

// ScaleEvent is a past rescale. Change is positive: replicas added by a
// scale-up, or replicas removed by a scale-down.
type ScaleEvent struct {
	At     time.Time
	Change int32
}

// BehaviorInput is everything Kubernetes' normalizeDesiredReplicasWithBehaviors
// (and, when Behavior is nil, the legacy normalizeDesiredReplicas) looks at.
type BehaviorInput struct {
	Now      time.Time
	Current  int32 // current replicas
	Min, Max int32 // minReplicas, maxReplicas
	Desired  int32 // the metric-based recommendation, before stabilization
	// Behavior nil: no behavior given (legacy path). It need not be defaulted:
	// NormalizeBehavior applies DefaultBehavior itself.
	Behavior        *autoscalingv2.HorizontalPodAutoscalerBehavior
	Recommendations []Recommendation // stored before this decision; Desired is not among them
	ScaleUps        []ScaleEvent
	ScaleDowns      []ScaleEvent
}

// BehaviorResult is the normalized replica count and why.
type BehaviorResult struct {
	Replicas int32
	// Limit is the ScalingLimited reason: DesiredWithinRange, ScaleUpLimit,
	// ScaleDownLimit, TooManyReplicas or TooFewReplicas (ScalingDisabled in
	// the one case Kubernetes leaves alone, see NormalizeBehavior).
	Limit string
	// Stabilized is the AbleToScale reason set by stabilization:
	// ReadyForNewScale, ScaleUpStabilized or ScaleDownStabilized. It is empty
	// when current replicas lie outside [Min, Max] or scaling is disabled:
	// Kubernetes then skips stabilization altogether.
	Stabilized string
	// Message explains the result to a person.
	Message string
}

// The reasons of BehaviorResult and Combined: Kubernetes' condition reasons.
const (
	ReasonDesiredWithinRange = behavior.ReasonDesiredWithinRange
	ReasonScaleUpLimit       = behavior.ReasonScaleUpLimit
	ReasonScaleDownLimit     = behavior.ReasonScaleDownLimit
	ReasonTooManyReplicas    = behavior.ReasonTooManyReplicas
	ReasonTooFewReplicas     = behavior.ReasonTooFewReplicas
	// ReasonScalingDisabled: current replicas are 0 and Min is not, so
	// Kubernetes does not scale (someone scaled the target to zero by hand).
	ReasonScalingDisabled = behavior.ReasonScalingDisabled

	ReasonReadyForNewScale    = behavior.ReasonReadyForNewScale
	ReasonScaleUpStabilized   = behavior.ReasonScaleUpStabilized
	ReasonScaleDownStabilized = behavior.ReasonScaleDownStabilized
)

// LegacyDownscaleStabilization is the scale-down stabilization window of the
// legacy path (nil behavior), kube-controller-manager's default for
// --horizontal-pod-autoscaler-downscale-stabilization. It is also the
// default scaleDown.stabilizationWindowSeconds (see DefaultBehavior).
const LegacyDownscaleStabilization = behavior.LegacyDownscaleStabilization

// NormalizeBehavior is one Kubernetes normalization: the metric proposal
// in.Desired, stabilized against in.Recommendations, limited by the scaling
// policies against in.ScaleUps and in.ScaleDowns, and clamped to
// [in.Min, in.Max]. With in.Behavior == nil it is the legacy path instead
// (inclusive 5-minute scale-down stabilization, scale-up cap
// max(2*Current, 4), no events), which differs from an empty behavior.
//
// Before normalizing it applies Kubernetes' reconcile rules for a current
// count outside the bounds, which skip stabilization and policies:
// Current > Max gives Max, Current < Min gives Min, and Current == 0 with
// Min != 0 means scaling is disabled and gives 0 (ReasonScalingDisabled).
// With 0 <= Min <= Max the result therefore always lies in [Min, Max] except
// in that disabled case.
//
// It is pure: it neither keeps nor mutates its input; History does the
// bookkeeping Kubernetes does after it (recording Desired as a
// recommendation). It is behavior.Normalize on the converted input.
func NormalizeBehavior(in BehaviorInput) BehaviorResult {
	return resultOf(behavior.Normalize(inputOf(in)))
}

func inputOf(in BehaviorInput) behavior.Input {
	return behavior.Input{
		Now: in.Now, Current: in.Current, Min: in.Min, Max: in.Max, Desired: in.Desired,
		Behavior:        ToBehavior(in.Behavior),
		Recommendations: convertSlice(in.Recommendations, func(r Recommendation) behavior.Recommendation { return behavior.Recommendation(r) }),
		ScaleUps:        convertSlice(in.ScaleUps, toEvent),
		ScaleDowns:      convertSlice(in.ScaleDowns, toEvent),
	}
}

func toEvent(e ScaleEvent) behavior.ScaleEvent { return behavior.ScaleEvent(e) }

func fromEvent(e behavior.ScaleEvent) ScaleEvent { return ScaleEvent(e) }

// convertSlice maps a slice; nil stays nil.
func convertSlice[From, To any](in []From, f func(From) To) []To {
	if in == nil {
		return nil
	}
	out := make([]To, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

func resultOf(r behavior.Result) BehaviorResult {
	return BehaviorResult{Replicas: r.Replicas, Limit: r.Limit, Stabilized: r.Stabilized, Message: r.Message()}
}
