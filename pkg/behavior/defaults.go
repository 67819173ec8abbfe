package behavior

import (
	"slices"
	"time"
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
	DefaultScaleDownWindowSeconds int32 = 300 // scaleDown.stabilizationWindowSeconds, see Default
)

// LegacyDownscaleStabilization is the scale-down stabilization window of the
// legacy path (nil behavior), kube-controller-manager's default for
// --horizontal-pod-autoscaler-downscale-stabilization. It is also the
// default scaleDown.stabilizationWindowSeconds.
const LegacyDownscaleStabilization = 5 * time.Minute

// The default policies. They are never handed out (DefaultScaleUpRules and
// DefaultScaleDownRules copy them), so sharing them is safe.
var (
	defaultUpPolicies = []Policy{
		{Type: Pods, Value: DefaultScaleUpPods, PeriodSeconds: DefaultPolicyPeriodSeconds},
		{Type: Percent, Value: DefaultScaleUpPercent, PeriodSeconds: DefaultPolicyPeriodSeconds},
	}
	defaultDownPolicies = []Policy{
		{Type: Percent, Value: DefaultScaleDownPercent, PeriodSeconds: DefaultPolicyPeriodSeconds},
	}
)

// DefaultScaleUpRules are Kubernetes' scaleUp defaults: no stabilization,
// selectPolicy Max, at most 4 pods or 100% per 15 s.
func DefaultScaleUpRules() *Rules {
	return &Rules{
		StabilizationWindowSeconds: ptr(DefaultScaleUpWindowSeconds),
		SelectPolicy:               ptr(Max),
		Policies:                   slices.Clone(defaultUpPolicies),
	}
}

// DefaultScaleDownRules are Kubernetes' scaleDown defaults with the
// controller's 300 s window: selectPolicy Max, at most 100% per 15 s.
func DefaultScaleDownRules() *Rules {
	return &Rules{
		StabilizationWindowSeconds: ptr(DefaultScaleDownWindowSeconds),
		SelectPolicy:               ptr(Max),
		Policies:                   slices.Clone(defaultDownPolicies),
	}
}

// Default returns a defaulted deep copy of b; nil stays nil (a nil behavior
// selects the legacy path and is not the same as an empty one).
//
// Each direction is filled field by field as Kubernetes' API defaulting
// does (copyHPAScalingRules): an unset selectPolicy becomes Max, unset
// policies become the defaults, and an explicit empty policies list stays
// empty (Validate rejects it). scaleUp's window defaults to 0, scaleDown's
// to 300 s: the API server leaves it unset and the controller fills it from
// --horizontal-pod-autoscaler-downscale-stabilization (default 5 min); Ebb
// has no such flag, so the default lands here and the result is the same.
// Tolerance stays unset: unset means DefaultTolerance.
func Default(b *Behavior) *Behavior {
	if b == nil {
		return nil
	}
	return &Behavior{
		ScaleUp:   fill(b.ScaleUp, DefaultScaleUpRules()),
		ScaleDown: fill(b.ScaleDown, DefaultScaleDownRules()),
	}
}

// fill copies every set field of from over the defaults in to, deep.
func fill(from, to *Rules) *Rules {
	if from == nil {
		return to
	}
	if from.SelectPolicy != nil {
		to.SelectPolicy = ptr(*from.SelectPolicy)
	}
	if from.StabilizationWindowSeconds != nil {
		to.StabilizationWindowSeconds = ptr(*from.StabilizationWindowSeconds)
	}
	if from.Policies != nil {
		to.Policies = slices.Clone(from.Policies)
	}
	if from.Tolerance != nil {
		to.Tolerance = ptr(*from.Tolerance)
	}
	return to
}

// effective is one direction's rules with the defaults applied, read
// without copying (Normalize must not allocate).
type effective struct {
	window   time.Duration
	sel      Select
	policies []Policy
}

func effectiveUp(b *Behavior) effective {
	return resolve(b.ScaleUp, seconds(DefaultScaleUpWindowSeconds), defaultUpPolicies)
}

func effectiveDown(b *Behavior) effective {
	return resolve(b.ScaleDown, seconds(DefaultScaleDownWindowSeconds), defaultDownPolicies)
}

func resolve(r *Rules, window time.Duration, policies []Policy) effective {
	e := effective{window: window, sel: Max, policies: policies}
	if r == nil {
		return e
	}
	if r.StabilizationWindowSeconds != nil {
		e.window = seconds(*r.StabilizationWindowSeconds)
	}
	if r.SelectPolicy != nil {
		e.sel = *r.SelectPolicy
	}
	if r.Policies != nil {
		e.policies = r.Policies
	}
	return e
}

// longestPeriod is getLongestPolicyPeriod.
func (e effective) longestPeriod() time.Duration {
	var longest time.Duration
	for _, p := range e.policies {
		longest = max(longest, seconds(p.PeriodSeconds))
	}
	return longest
}

// seconds converts an API seconds field; int32 seconds cannot overflow a
// Duration.
func seconds(s int32) time.Duration {
	return time.Duration(s) * time.Second
}

func ptr[T any](v T) *T { return &v }
