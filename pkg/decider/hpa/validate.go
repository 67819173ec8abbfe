package hpa

import (
	"errors"
	"fmt"
	"strconv"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// Kubernetes' validation bounds (pkg/apis/autoscaling/validation).
const (
	MaxStabilizationWindowSeconds int32 = 3600
	MaxPeriodSeconds              int32 = 1800
)

// FieldError is one broken validation rule. Its text names the field path,
// the value as given, the rule and the fix:
//
//	scaleUp.policies[0].periodSeconds = 0: must be greater than 0 and at most 1800; fix: use a period of 1 to 1800 seconds
type FieldError struct {
	Field string // path inside the behavior, e.g. "scaleDown.selectPolicy"
	Value string // the offending value, as written
	Rule  string
	Fix   string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s = %s: %s; fix: %s", e.Field, e.Value, e.Rule, e.Fix)
}

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
func ValidateBehavior(b *autoscalingv2.HorizontalPodAutoscalerBehavior) error {
	if b == nil {
		return nil
	}
	errs := validateRules(b.ScaleUp, "scaleUp")
	errs = append(errs, validateRules(b.ScaleDown, "scaleDown")...)
	return errors.Join(errs...)
}

func validateRules(r *autoscalingv2.HPAScalingRules, path string) []error {
	if r == nil {
		return nil
	}
	var errs []error
	if w := r.StabilizationWindowSeconds; w != nil && (*w < 0 || *w > MaxStabilizationWindowSeconds) {
		errs = append(errs, &FieldError{path + ".stabilizationWindowSeconds", itoa(*w),
			fmt.Sprintf("must be within [0, %d]", MaxStabilizationWindowSeconds),
			fmt.Sprintf("use a window of 0 to %d seconds", MaxStabilizationWindowSeconds)})
	}
	if s := r.SelectPolicy; s != nil && !validSelectPolicy(*s) {
		errs = append(errs, &FieldError{path + ".selectPolicy", strconv.Quote(string(*s)),
			"supported values: Max, Min, Disabled",
			"use Max (the policy allowing the biggest change), Min (the smallest) or Disabled (no scaling this way)"})
	}
	if len(r.Policies) == 0 {
		errs = append(errs, &FieldError{path + ".policies", "[]",
			"must specify at least one policy",
			"add a policy such as {type: Pods, value: 4, periodSeconds: 15}, or leave policies out to get the defaults"})
	}
	for i, p := range r.Policies {
		errs = append(errs, validatePolicy(p, fmt.Sprintf("%s.policies[%d]", path, i))...)
	}
	if t := r.Tolerance; t != nil && t.Sign() < 0 {
		errs = append(errs, &FieldError{path + ".tolerance", strconv.Quote(t.String()),
			"must be greater than or equal to 0",
			`use a non-negative fraction of the target, such as "0.1" for 10%`})
	}
	return errs
}

func validatePolicy(p autoscalingv2.HPAScalingPolicy, path string) []error {
	var errs []error
	if p.Type != autoscalingv2.PodsScalingPolicy && p.Type != autoscalingv2.PercentScalingPolicy {
		errs = append(errs, &FieldError{path + ".type", strconv.Quote(string(p.Type)),
			"supported values: Pods, Percent",
			"use Pods (a number of pods per period) or Percent (a percentage of the current count per period)"})
	}
	if p.Value <= 0 {
		errs = append(errs, &FieldError{path + ".value", itoa(p.Value),
			"must be greater than 0",
			"use a positive number of pods or percent"})
	}
	if p.PeriodSeconds <= 0 || p.PeriodSeconds > MaxPeriodSeconds {
		errs = append(errs, &FieldError{path + ".periodSeconds", itoa(p.PeriodSeconds),
			fmt.Sprintf("must be greater than 0 and at most %d", MaxPeriodSeconds),
			fmt.Sprintf("use a period of 1 to %d seconds", MaxPeriodSeconds)})
	}
	return errs
}

func validSelectPolicy(s autoscalingv2.ScalingPolicySelect) bool {
	switch s {
	case autoscalingv2.MaxChangePolicySelect, autoscalingv2.MinChangePolicySelect, autoscalingv2.DisabledPolicySelect:
		return true
	}
	return false
}

func itoa(v int32) string { return strconv.Itoa(int(v)) }
