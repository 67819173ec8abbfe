package hpa

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// Kubernetes' behavior defaults (pkg/apis/autoscaling/v2/defaults.go). The
// API comment on HorizontalPodAutoscalerBehavior.scaleUp says "per 60
// seconds"; the code and the HPAScalingRules comment say 15, and 15 is what
// the apiserver stores.
const (
	DefaultScaleUpPods            int32 = 4   // scaleUp Pods policy value
	DefaultScaleUpPercent         int32 = 100 // scaleUp Percent policy value
	DefaultScaleDownPercent       int32 = 100 // scaleDown Percent policy value
	DefaultPolicyPeriodSeconds    int32 = 15  // periodSeconds of every default policy
	DefaultScaleUpWindowSeconds   int32 = 0   // scaleUp.stabilizationWindowSeconds
	DefaultScaleDownWindowSeconds int32 = 300 // scaleDown.stabilizationWindowSeconds, see DefaultBehavior
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
	return &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptr(DefaultScaleUpWindowSeconds),
		SelectPolicy:               ptr(autoscalingv2.MaxChangePolicySelect),
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: DefaultScaleUpPods, PeriodSeconds: DefaultPolicyPeriodSeconds},
			{Type: autoscalingv2.PercentScalingPolicy, Value: DefaultScaleUpPercent, PeriodSeconds: DefaultPolicyPeriodSeconds},
		},
	}
}

func defaultScaleDownRules() *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptr(DefaultScaleDownWindowSeconds),
		SelectPolicy:               ptr(autoscalingv2.MaxChangePolicySelect),
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PercentScalingPolicy, Value: DefaultScaleDownPercent, PeriodSeconds: DefaultPolicyPeriodSeconds},
		},
	}
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

func ptr[T any](v T) *T { return &v }
