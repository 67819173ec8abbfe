package hpa

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"ebb.dev/ebb/pkg/behavior"
)

// ToBehavior converts a Kubernetes behavior to the pure mirror that Ebb's
// decider runs on, field for field (nil stays nil, unset stays unset, an
// empty policies list stays empty). A tolerance Quantity becomes its
// float64 approximation.
func ToBehavior(b *autoscalingv2.HorizontalPodAutoscalerBehavior) *behavior.Behavior {
	if b == nil {
		return nil
	}
	return &behavior.Behavior{ScaleUp: toRules(b.ScaleUp), ScaleDown: toRules(b.ScaleDown)}
}

func toRules(r *autoscalingv2.HPAScalingRules) *behavior.Rules {
	if r == nil {
		return nil
	}
	out := &behavior.Rules{}
	if r.StabilizationWindowSeconds != nil {
		out.StabilizationWindowSeconds = ptr(*r.StabilizationWindowSeconds)
	}
	if r.SelectPolicy != nil {
		out.SelectPolicy = ptr(behavior.Select(*r.SelectPolicy))
	}
	if r.Policies != nil {
		out.Policies = make([]behavior.Policy, len(r.Policies))
		for i, p := range r.Policies {
			out.Policies[i] = behavior.Policy{Type: behavior.PolicyType(p.Type), Value: p.Value, PeriodSeconds: p.PeriodSeconds}
		}
	}
	if r.Tolerance != nil {
		out.Tolerance = ptr(r.Tolerance.AsApproximateFloat64())
	}
	return out
}

// fromRules converts mirror rules without a tolerance (the defaults) back
// to Kubernetes' type.
func fromRules(r *behavior.Rules) *autoscalingv2.HPAScalingRules {
	out := &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: r.StabilizationWindowSeconds}
	if r.SelectPolicy != nil {
		out.SelectPolicy = ptr(autoscalingv2.ScalingPolicySelect(*r.SelectPolicy))
	}
	for _, p := range r.Policies {
		out.Policies = append(out.Policies, autoscalingv2.HPAScalingPolicy{
			Type: autoscalingv2.HPAScalingPolicyType(p.Type), Value: p.Value, PeriodSeconds: p.PeriodSeconds})
	}
	return out
}

func ptr[T any](v T) *T { return &v }
