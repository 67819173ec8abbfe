package behavior

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Kubernetes' validation bounds (pkg/apis/autoscaling/validation).
const (
	MaxStabilizationWindowSeconds int32 = 3600
	MaxPeriodSeconds              int32 = 1800
)

// FieldError is one broken rule. Its text names the field path, the value
// as given, the rule and the fix:
//
//	scaleUp.policies[0].periodSeconds = 0: must be greater than 0 and at most 1800; fix: use a period of 1 to 1800 seconds
//
// A problem with the whole value (it is empty, or not JSON) has no Field:
//
//	is empty; fix: remove the annotation ...
type FieldError struct {
	Field string // path inside the behavior, e.g. "scaleDown.selectPolicy"; "" for the whole value
	Value string // the offending value, as written
	Rule  string
	Fix   string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s; fix: %s", e.Rule, e.Fix)
	}
	return fmt.Sprintf("%s = %s: %s; fix: %s", e.Field, e.Value, e.Rule, e.Fix)
}

// Validate applies Kubernetes' API validation of a behavior (as given:
// defaulting comes first, see Default) and returns every broken rule at
// once, joined, each a *FieldError. nil is valid. Per direction:
//
//   - 0 <= stabilizationWindowSeconds <= 3600;
//   - selectPolicy is Max, Min or Disabled;
//   - at least one policy, whatever selectPolicy says (Kubernetes requires
//     one even with Disabled);
//   - each policy: type Pods or Percent, value > 0, 0 < periodSeconds <= 1800;
//   - tolerance >= 0 (no upper bound) and finite.
func Validate(b *Behavior) error {
	if b == nil {
		return nil
	}
	errs := validateRules(b.ScaleUp, "scaleUp")
	errs = append(errs, validateRules(b.ScaleDown, "scaleDown")...)
	return errors.Join(errs...)
}

func validateRules(r *Rules, path string) []error {
	if r == nil {
		return nil
	}
	var errs []error
	if w := r.StabilizationWindowSeconds; w != nil && (*w < 0 || *w > MaxStabilizationWindowSeconds) {
		errs = append(errs, &FieldError{path + ".stabilizationWindowSeconds", itoa(*w),
			fmt.Sprintf("must be within [0, %d]", MaxStabilizationWindowSeconds),
			fmt.Sprintf("use a window of 0 to %d seconds", MaxStabilizationWindowSeconds)})
	}
	if s := r.SelectPolicy; s != nil && !validSelect(*s) {
		errs = append(errs, &FieldError{path + ".selectPolicy", strconv.Quote(string(*s)),
			"supported values: Max, Min, Disabled",
			"use Max (the policy allowing the biggest change), Min (the smallest) or Disabled (no scaling this way)"})
	}
	if len(r.Policies) == 0 {
		errs = append(errs, noPolicy(path))
	}
	for i, p := range r.Policies {
		errs = append(errs, validatePolicy(p, fmt.Sprintf("%s.policies[%d]", path, i))...)
	}
	if t := r.Tolerance; t != nil && (*t < 0 || math.IsNaN(*t) || math.IsInf(*t, 0)) {
		errs = append(errs, &FieldError{path + ".tolerance", strconv.Quote(strconv.FormatFloat(*t, 'g', -1, 64)),
			"must be greater than or equal to 0",
			`use a non-negative fraction of the target, such as "0.1" for 10%`})
	}
	return errs
}

func noPolicy(path string) error {
	return &FieldError{path + ".policies", "[]",
		"must specify at least one policy",
		"add a policy such as {type: Pods, value: 4, periodSeconds: 15}, or leave policies out to get the defaults"}
}

func validatePolicy(p Policy, path string) []error {
	var errs []error
	if p.Type != Pods && p.Type != Percent {
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

func validSelect(s Select) bool {
	return s == Max || s == Min || s == Disabled
}

func itoa(v int32) string { return strconv.Itoa(int(v)) }
