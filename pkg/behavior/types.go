package behavior

import "time"

// PolicyType is the type of a scaling policy (autoscalingv2.HPAScalingPolicyType).
type PolicyType string

// Policy types.
const (
	// Pods: at most Value pods added or removed per period.
	Pods PolicyType = "Pods"
	// Percent: at most Value percent of the count at the start of the period.
	Percent PolicyType = "Percent"
)

// Select is a direction's selectPolicy (autoscalingv2.ScalingPolicySelect).
type Select string

// Policy selections.
const (
	// Max picks the policy that allows the largest change (the default).
	Max Select = "Max"
	// Min picks the policy that allows the smallest change.
	Min Select = "Min"
	// Disabled forbids scaling in this direction.
	Disabled Select = "Disabled"
)

// Policy is one scaling policy (autoscalingv2.HPAScalingPolicy).
type Policy struct {
	Type          PolicyType
	Value         int32
	PeriodSeconds int32
}

// Rules are the scaling rules of one direction (autoscalingv2.HPAScalingRules).
// A nil pointer or a nil Policies means "unset": Default fills it. An empty,
// non-nil Policies is an explicit empty list, which Validate rejects.
type Rules struct {
	StabilizationWindowSeconds *int32
	SelectPolicy               *Select
	Policies                   []Policy
	// Tolerance is the direction's usage-ratio tolerance (Kubernetes'
	// Quantity as a float64); nil means DefaultTolerance.
	Tolerance *float64
}

// Behavior is an HPA behavior (autoscalingv2.HorizontalPodAutoscalerBehavior).
// A nil *Behavior selects the legacy path, which differs from an empty one.
type Behavior struct {
	ScaleUp, ScaleDown *Rules
}

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

// Input is everything Kubernetes' normalizeDesiredReplicasWithBehaviors
// (and, when Behavior is nil, the legacy normalizeDesiredReplicas) looks at.
type Input struct {
	Now      time.Time
	Current  int32 // current replicas
	Min, Max int32 // minReplicas, maxReplicas
	Desired  int32 // the metric-based recommendation, before stabilization
	// Behavior nil: the legacy path. It need not be defaulted.
	Behavior *Behavior
	// LegacyWindow is the legacy path's scale-down stabilization window
	// (kube-controller-manager's --horizontal-pod-autoscaler-downscale-
	// stabilization); nil means LegacyDownscaleStabilization. 0 is none.
	LegacyWindow    *time.Duration
	Recommendations []Recommendation // stored before this decision; Desired is not among them
	ScaleUps        []ScaleEvent
	ScaleDowns      []ScaleEvent

	// index, when set (by History), holds Recommendations indexed, so that
	// stabilization need not scan them.
	index *recIndex
}

// Result is the normalized replica count, Kubernetes' reasons, and the
// numbers Message explains them with.
type Result struct {
	Replicas int32
	// Limit is the ScalingLimited reason: DesiredWithinRange, ScaleUpLimit,
	// ScaleDownLimit, TooManyReplicas or TooFewReplicas (ScalingDisabled in
	// the one case Kubernetes leaves alone, see Normalize).
	Limit string
	// Stabilized is the AbleToScale reason set by stabilization:
	// ReadyForNewScale, ScaleUpStabilized or ScaleDownStabilized. It is
	// empty when Current lies outside [Min, Max] or scaling is disabled:
	// Kubernetes then skips stabilization altogether.
	Stabilized string

	// Current, Desired, Min and Max are copied from the Input.
	Current, Desired, Min, Max int32
	// StabilizedReplicas is the count after stabilization, before the
	// policies and min/max.
	StabilizedReplicas int32
	// Window is the stabilization window that held the count (the scale-up
	// window for ScaleUpStabilized, the scale-down one otherwise).
	Window time.Duration
	// Select is the selectPolicy of the direction whose policies bound the
	// count (meaningful with ScaleUpLimit and ScaleDownLimit).
	Select Select
	// Legacy reports the legacy path (nil behavior).
	Legacy bool
}

// The reasons of Result: Kubernetes' condition reasons.
const (
	ReasonDesiredWithinRange = "DesiredWithinRange"
	ReasonScaleUpLimit       = "ScaleUpLimit"
	ReasonScaleDownLimit     = "ScaleDownLimit"
	ReasonTooManyReplicas    = "TooManyReplicas"
	ReasonTooFewReplicas     = "TooFewReplicas"
	// ReasonScalingDisabled: Current is 0 and Min is not, so Kubernetes does
	// not scale (someone scaled the target to zero by hand).
	ReasonScalingDisabled = "ScalingDisabled"

	ReasonReadyForNewScale    = "ReadyForNewScale"
	ReasonScaleUpStabilized   = "ScaleUpStabilized"
	ReasonScaleDownStabilized = "ScaleDownStabilized"
)
