package hpa

import (
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// stabilized is the outcome of a stabilization step.
type stabilized struct {
	replicas int32
	reason   string // ReadyForNewScale, ScaleUpStabilized or ScaleDownStabilized
	message  string
}

// stabilize is stabilizeRecommendationWithBehaviors. A recommendation is in a
// window iff it is strictly younger than the window (rec.At after
// Now-window), so one exactly as old as the window is outside.
//
//	upFloor  = min(Desired, recommendations in the scale-up window)
//	downCeil = max(Desired, recommendations in the scale-down window)
//	result   = Current raised to upFloor, then lowered to downCeil
//
// A scale-up therefore goes only as high as the lowest recent
// recommendation, a scale-down only as low as the highest, and when the
// windows disagree with the direction the count stays put. b is defaulted.
func stabilize(in BehaviorInput, b *autoscalingv2.HorizontalPodAutoscalerBehavior) stabilized {
	upWindow := windowOf(b.ScaleUp, 0)
	downWindow := windowOf(b.ScaleDown, LegacyDownscaleStabilization)
	upCutoff, downCutoff := in.Now.Add(-upWindow), in.Now.Add(-downWindow)

	upFloor, downCeil := in.Desired, in.Desired
	for _, r := range in.Recommendations {
		if r.At.After(upCutoff) {
			upFloor = min(upFloor, r.Replicas)
		}
		if r.At.After(downCutoff) {
			downCeil = max(downCeil, r.Replicas)
		}
	}
	replicas := in.Current
	if replicas < upFloor {
		replicas = upFloor
	}
	if replicas > downCeil {
		replicas = downCeil
	}
	return stabilized{
		replicas: replicas,
		reason:   stabilizedReason(in.Current, in.Desired, replicas),
		message:  stabilizedMessage(in, replicas, upWindow, downWindow),
	}
}

// stabilizedReason follows normalizeDesiredReplicasWithBehaviors: the reason
// names the direction of Desired against Current (>= is "up") and is set only
// when stabilization changed the value.
func stabilizedReason(current, desired, result int32) string {
	switch {
	case result == desired:
		return ReasonReadyForNewScale
	case desired >= current:
		return ReasonScaleUpStabilized
	default:
		return ReasonScaleDownStabilized
	}
}

func stabilizedMessage(in BehaviorInput, result int32, upWindow, downWindow time.Duration) string {
	switch stabilizedReason(in.Current, in.Desired, result) {
	case ReasonReadyForNewScale:
		return fmt.Sprintf("recommended size %d needs no stabilization", in.Desired)
	case ReasonScaleUpStabilized:
		return fmt.Sprintf("recent recommendations were lower than current one, applying the lowest recent recommendation: %d held at %d by the %s scale-up stabilization window",
			in.Desired, result, upWindow)
	default:
		return fmt.Sprintf("recent recommendations were higher than current one, applying the highest recent recommendation: %d held at %d by the %s scale-down stabilization window",
			in.Desired, result, downWindow)
	}
}

// stabilizeLegacy is stabilizeRecommendation, the legacy path: the maximum of
// Desired and every recommendation not older than 5 minutes. Unlike the
// behavior path the window is inclusive: a recommendation exactly 5 minutes
// old still counts (Kubernetes drops only those Before the cutoff).
func stabilizeLegacy(in BehaviorInput) stabilized {
	cutoff := in.Now.Add(-LegacyDownscaleStabilization)
	replicas := in.Desired
	for _, r := range in.Recommendations {
		if !r.At.Before(cutoff) && r.Replicas > replicas {
			replicas = r.Replicas
		}
	}
	if replicas == in.Desired {
		return stabilized{replicas, ReasonReadyForNewScale,
			fmt.Sprintf("recommended size %d needs no stabilization", in.Desired)}
	}
	return stabilized{replicas, ReasonScaleDownStabilized, fmt.Sprintf(
		"recent recommendations were higher than current one, applying the highest recent recommendation: %d held at %d by the legacy %s window",
		in.Desired, replicas, LegacyDownscaleStabilization)}
}

// windowOf is a direction's stabilization window, def when it is unset
// (only possible for a behavior that was not defaulted).
func windowOf(rules *autoscalingv2.HPAScalingRules, def time.Duration) time.Duration {
	if rules == nil || rules.StabilizationWindowSeconds == nil {
		return def
	}
	return seconds(*rules.StabilizationWindowSeconds)
}

// seconds converts an API seconds field; int32 seconds cannot overflow a
// Duration.
func seconds(s int32) time.Duration {
	return time.Duration(s) * time.Second
}
