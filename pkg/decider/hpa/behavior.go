package hpa

import (
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
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
	ReasonDesiredWithinRange = "DesiredWithinRange"
	ReasonScaleUpLimit       = "ScaleUpLimit"
	ReasonScaleDownLimit     = "ScaleDownLimit"
	ReasonTooManyReplicas    = "TooManyReplicas"
	ReasonTooFewReplicas     = "TooFewReplicas"
	// ReasonScalingDisabled: current replicas are 0 and Min is not, so
	// Kubernetes does not scale (someone scaled the target to zero by hand).
	ReasonScalingDisabled = "ScalingDisabled"

	ReasonReadyForNewScale    = "ReadyForNewScale"
	ReasonScaleUpStabilized   = "ScaleUpStabilized"
	ReasonScaleDownStabilized = "ScaleDownStabilized"
)

// LegacyDownscaleStabilization is the scale-down stabilization window of the
// legacy path (nil behavior), kube-controller-manager's default for
// --horizontal-pod-autoscaler-downscale-stabilization. It is also the
// default scaleDown.stabilizationWindowSeconds (see DefaultBehavior).
const LegacyDownscaleStabilization = 5 * time.Minute

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
// recommendation).
func NormalizeBehavior(in BehaviorInput) BehaviorResult {
	if r, ok := outOfBounds(in); ok {
		return r
	}
	if in.Behavior == nil {
		return normalizeLegacy(in)
	}
	return normalizeWithBehavior(in, DefaultBehavior(in.Behavior))
}

// outOfBounds is the first part of Kubernetes' reconcileAutoscaler: the cases
// in which no metric is read and no normalization happens.
func outOfBounds(in BehaviorInput) (BehaviorResult, bool) {
	switch {
	case in.Current == 0 && in.Min != 0:
		return BehaviorResult{
			Replicas: 0,
			Limit:    ReasonScalingDisabled,
			Message:  fmt.Sprintf("scaling is disabled since the replica count of the target is zero (min %d)", in.Min),
		}, true
	case in.Current > in.Max:
		return BehaviorResult{
			Replicas: in.Max,
			Limit:    ReasonTooManyReplicas,
			Message:  fmt.Sprintf("current number of replicas %d above max %d: scaling to max at once, without stabilization or policies", in.Current, in.Max),
		}, true
	case in.Current < in.Min:
		return BehaviorResult{
			Replicas: in.Min,
			Limit:    ReasonTooFewReplicas,
			Message:  fmt.Sprintf("current number of replicas %d below min %d: scaling to min at once, without stabilization or policies", in.Current, in.Min),
		}, true
	}
	return BehaviorResult{}, false
}

// inBounds reports whether NormalizeBehavior reaches normalization (and so
// whether Kubernetes would record in.Desired as a recommendation).
func inBounds(in BehaviorInput) bool {
	_, out := outOfBounds(in)
	return !out
}

// normalizeWithBehavior is normalizeDesiredReplicasWithBehaviors: stabilize,
// then limit the rate, then min/max (inside the rate limit). b is defaulted.
func normalizeWithBehavior(in BehaviorInput, b *autoscalingv2.HorizontalPodAutoscalerBehavior) BehaviorResult {
	st := stabilize(in, b)
	lim := limitRate(rateInput{
		now:        in.Now,
		current:    in.Current,
		stabilized: st.replicas,
		min:        in.Min,
		max:        in.Max,
		up:         b.ScaleUp,
		down:       b.ScaleDown,
		scaleUps:   in.ScaleUps,
		scaleDowns: in.ScaleDowns,
	})
	return BehaviorResult{
		Replicas:   lim.replicas,
		Limit:      lim.reason,
		Stabilized: st.reason,
		Message:    st.message + "; " + lim.message,
	}
}

// normalizeLegacy is normalizeDesiredReplicas, the path of every HPA without
// behavior: stabilization over an inclusive 5-minute window (scale-down only:
// the maximum of the recent recommendations), then convertDesiredReplicasWithRules.
func normalizeLegacy(in BehaviorInput) BehaviorResult {
	st := stabilizeLegacy(in)
	replicas, reason, message := convertWithRules(in.Current, st.replicas, in.Min, in.Max)
	return BehaviorResult{
		Replicas:   replicas,
		Limit:      reason,
		Stabilized: st.reason,
		Message:    st.message + "; " + message,
	}
}

// convertWithRules is Kubernetes' convertDesiredReplicasWithRules: the legacy
// per-sync scale-up cap max(2*current, 4) and min/max. The cap binds (reason
// ScaleUpLimit) only when it is strictly below max.
func convertWithRules(current, desired, minReplicas, maxReplicas int32) (int32, string, string) {
	upLimit := legacyScaleUpLimit(current)
	maxAllowed, reason := int64(maxReplicas), ReasonTooManyReplicas
	if int64(maxReplicas) > upLimit {
		maxAllowed, reason = upLimit, ReasonScaleUpLimit
	}
	switch {
	case desired < minReplicas:
		return minReplicas, ReasonTooFewReplicas, fmt.Sprintf(
			"the desired replica count is less than the minimum replica count: %d raised to min %d", desired, minReplicas)
	case int64(desired) > maxAllowed:
		if reason == ReasonScaleUpLimit {
			return int32(maxAllowed), reason, fmt.Sprintf(
				"the desired replica count is increasing faster than the maximum scale rate: %d capped at max(2*%d, 4) = %d", desired, current, maxAllowed)
		}
		return int32(maxAllowed), reason, fmt.Sprintf(
			"the desired replica count is more than the maximum replica count: %d capped at max %d", desired, maxAllowed)
	}
	return desired, ReasonDesiredWithinRange, fmt.Sprintf("the desired count %d is within the acceptable range", desired)
}

// legacyScaleUpLimit is calculateScaleUpLimit: max(2*current, 4), computed
// in int64 so that it cannot overflow.
func legacyScaleUpLimit(current int32) int64 {
	return max(2*int64(current), 4)
}
