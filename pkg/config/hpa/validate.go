package hpa

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"ebb.dev/ebb/pkg/behavior"
	"ebb.dev/ebb/pkg/fielderr"
)

// Kubernetes' validation bounds (pkg/apis/autoscaling/validation).
const (
	MaxStabilizationWindowSeconds = behavior.MaxStabilizationWindowSeconds
	MaxPeriodSeconds              = behavior.MaxPeriodSeconds
)

// FieldError is one broken validation rule: Ebb's one error type,
// fielderr.Error (package ebb.dev/ebb/pkg/fielderr). Its text names the field
// path, the value as given, the rule and the fix:
//
//	scaleUp.policies[0].periodSeconds = 0: must be greater than 0 and at most 1800; fix: use a period of 1 to 1800 seconds
type FieldError = fielderr.Error

// ValidateBehavior applies Kubernetes' API validation of a behavior (as
// given: defaulting comes first, see DefaultBehavior and ParseBehavior) and
// returns every broken rule at once, joined, each a *FieldError. nil is
// valid. Per direction:
//
//   - 0 <= stabilizationWindowSeconds <= 3600;
//   - selectPolicy is Max, Min or Disabled;
//   - at least one policy, whatever selectPolicy says (Kubernetes requires
//     one even with Disabled);
//   - each policy: type Pods or Percent, value > 0, 0 < periodSeconds <= 1800;
//   - tolerance >= 0 (no upper bound).
//
// It is behavior.Validate on the converted behavior.
func ValidateBehavior(b *autoscalingv2.HorizontalPodAutoscalerBehavior) error {
	return behavior.Validate(ToBehavior(b))
}
