package behavior

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"ebb.dev/ebb/pkg/fielderr"
)

// Kubernetes' validation bounds (pkg/apis/autoscaling/validation).
const (
	MaxStabilizationWindowSeconds int32 = 3600
	MaxPeriodSeconds              int32 = 1800
)

// Validate applies Kubernetes' API validation of a behavior (as given:
// defaulting comes first, see Default) and returns every broken rule at
// once, joined, each a *fielderr.Error. nil is valid. Per direction:
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
		errs = append(errs, &fielderr.Error{Field: path + ".stabilizationWindowSeconds", FieldValue: itoa(*w),
			Rule: fmt.Sprintf("must be within [0, %d]", MaxStabilizationWindowSeconds),
			Fix:  fmt.Sprintf("use a window of 0 to %d seconds", MaxStabilizationWindowSeconds)})
	}
	if s := r.SelectPolicy; s != nil && !validSelect(*s) {
		errs = append(errs, &fielderr.Error{Field: path + ".selectPolicy", FieldValue: strconv.Quote(string(*s)),
			Rule: "supported values: Max, Min, Disabled",
			Fix:  "use Max (the policy allowing the biggest change), Min (the smallest) or Disabled (no scaling this way)"})
	}
	if len(r.Policies) == 0 {
		errs = append(errs, noPolicy(path))
	}
	for i, p := range r.Policies {
		errs = append(errs, validatePolicy(p, fmt.Sprintf("%s.policies[%d]", path, i))...)
	}
	if t := r.Tolerance; t != nil && (*t < 0 || math.IsNaN(*t) || math.IsInf(*t, 0)) {
		errs = append(errs, &fielderr.Error{Field: path + ".tolerance", FieldValue: strconv.Quote(strconv.FormatFloat(*t, 'g', -1, 64)),
			Rule: "must be greater than or equal to 0",
			Fix:  `use a non-negative fraction of the target, such as "0.1" for 10%`})
	}
	return errs
}

func noPolicy(path string) error {
	return &fielderr.Error{Field: path + ".policies", FieldValue: "[]",
		Rule: "must specify at least one policy",
		Fix:  "add a policy such as {type: Pods, value: 4, periodSeconds: 15}, or leave policies out to get the defaults"}
}

func validatePolicy(p Policy, path string) []error {
	var errs []error
	if p.Type != Pods && p.Type != Percent {
		errs = append(errs, &fielderr.Error{Field: path + ".type", FieldValue: strconv.Quote(string(p.Type)),
			Rule: "supported values: Pods, Percent",
			Fix:  "use Pods (a number of pods per period) or Percent (a percentage of the current count per period)"})
	}
	if p.Value <= 0 {
		errs = append(errs, &fielderr.Error{Field: path + ".value", FieldValue: itoa(p.Value),
			Rule: "must be greater than 0",
			Fix:  "use a positive number of pods or percent"})
	}
	if p.PeriodSeconds <= 0 || p.PeriodSeconds > MaxPeriodSeconds {
		errs = append(errs, &fielderr.Error{Field: path + ".periodSeconds", FieldValue: itoa(p.PeriodSeconds),
			Rule: fmt.Sprintf("must be greater than 0 and at most %d", MaxPeriodSeconds),
			Fix:  fmt.Sprintf("use a period of 1 to %d seconds", MaxPeriodSeconds)})
	}
	return errs
}

func validSelect(s Select) bool {
	return s == Max || s == Min || s == Disabled
}

func itoa(v int32) string { return strconv.Itoa(int(v)) }
