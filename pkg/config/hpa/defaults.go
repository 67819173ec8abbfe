package hpa

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"ebb.dev/ebb/pkg/behavior"
)

// Kubernetes' behavior defaults (pkg/apis/autoscaling/v2/defaults.go); see
// package behavior.
const (
	DefaultScaleUpPods            = behavior.DefaultScaleUpPods
	DefaultScaleUpPercent         = behavior.DefaultScaleUpPercent
	DefaultScaleDownPercent       = behavior.DefaultScaleDownPercent
	DefaultPolicyPeriodSeconds    = behavior.DefaultPolicyPeriodSeconds
	DefaultScaleUpWindowSeconds   = behavior.DefaultScaleUpWindowSeconds
	DefaultScaleDownWindowSeconds = behavior.DefaultScaleDownWindowSeconds
)

// DefaultBehavior returns a defaulted deep copy of b; nil stays nil (a nil
// behavior selects the legacy path and is not the same as an empty one).
//
// Each direction is filled field by field as Kubernetes' API defaulting
// does (copyHPAScalingRules): an unset selectPolicy becomes Max, unset
// policies become the defaults (scaleUp: Pods 4 and Percent 100 per 15 s;
// scaleDown: Percent 100 per 15 s), and an explicit empty policies list
// stays empty (ValidateBehavior rejects it). scaleUp's window defaults to 0.
//
// scaleDown's window defaults to 300 s. The API server leaves it unset and
// the controller fills it from --horizontal-pod-autoscaler-downscale-
// stabilization (default 5 min, maybeInitScaleDownStabilizationWindow); Ebb
// has no such flag, so the default lands here and the result is the same.
//
// Tolerance stays unset: unset means the cluster-wide default (ToleranceFor).
// The defaults are package behavior's (behavior.Default does the same on
// the mirror types); this works on Kubernetes' types so that a tolerance
// Quantity is kept exactly.
func DefaultBehavior(b *autoscalingv2.HorizontalPodAutoscalerBehavior) *autoscalingv2.HorizontalPodAutoscalerBehavior {
	if b == nil {
		return nil
	}
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp:   fillRules(b.ScaleUp, defaultScaleUpRules()),
		ScaleDown: fillRules(b.ScaleDown, defaultScaleDownRules()),
	}
}

func defaultScaleUpRules() *autoscalingv2.HPAScalingRules {
	return fromRules(behavior.DefaultScaleUpRules())
}

func defaultScaleDownRules() *autoscalingv2.HPAScalingRules {
	return fromRules(behavior.DefaultScaleDownRules())
}

// fillRules copies every set field of from over the defaults in to, deep.
func fillRules(from, to *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if from == nil {
		return to
	}
	from = from.DeepCopy()
	if from.SelectPolicy != nil {
		to.SelectPolicy = from.SelectPolicy
	}
	if from.StabilizationWindowSeconds != nil {
		to.StabilizationWindowSeconds = from.StabilizationWindowSeconds
	}
	if from.Policies != nil {
		to.Policies = from.Policies
	}
	if from.Tolerance != nil {
		to.Tolerance = from.Tolerance
	}
	return to
}
