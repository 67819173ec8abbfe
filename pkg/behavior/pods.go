package behavior

import (
	"errors"
	"time"
)

// PodMetric is one pod's sample of a per-pod metric (concurrency, rps, cpu,
// memory) and the pod state the replica calculation looks at.
type PodMetric struct {
	Name     string
	Phase    string   // "Pending", "Running", "Succeeded" or "Failed"
	Ready    bool     // the pod's Ready condition
	Deleting bool     // deletionTimestamp set
	Value    *float64 // nil: no sample for this pod
	// Started is the pod's startTime and ReadySince the lastTransitionTime
	// of its Ready condition; only cpu's readiness rules read them (a zero
	// time means unknown, which makes the pod unready for cpu).
	Started, ReadySince time.Time
}

// Pod phases, as in k8s.io/api/core/v1.
const (
	PhasePending   = "Pending"
	PhaseRunning   = "Running"
	PhaseSucceeded = "Succeeded"
	PhaseFailed    = "Failed"
)

// kube-controller-manager's defaults for the cpu readiness rules
// (--horizontal-pod-autoscaler-cpu-initialization-period and
// --horizontal-pod-autoscaler-initial-readiness-delay).
const (
	CPUInitializationPeriod = 5 * time.Minute
	InitialReadinessDelay   = 30 * time.Second
)

// TargetKind is how a metric's target is expressed.
type TargetKind uint8

// Target kinds.
const (
	// AverageValue: a per-pod average in the metric's unit (Kubernetes'
	// Pods metric, and Resource with averageValue). Concurrency and rps.
	AverageValue TargetKind = iota
	// Utilization: a percentage of the pods' request (Kubernetes' Resource
	// metric with averageUtilization). Samples are per-pod percentages.
	Utilization
)

// Target is one metric's target and the rules its samples follow.
type Target struct {
	Kind TargetKind
	// Value is the per-pod average (AverageValue) or the utilization in
	// percent of the request (Utilization, rounded up to a whole percent as
	// Kubernetes' averageUtilization is an integer).
	Value float64
	// CPU applies Kubernetes' cpu readiness rules, which read Now and
	// Window: a pod still initializing counts only once it is ready and its
	// Ready condition is at least one sample window old.
	CPU    bool
	Now    time.Time
	Window time.Duration
	// InitializationPeriod and ReadinessDelay are the cpu rules' periods
	// (CPUInitializationPeriod and InitialReadinessDelay in Kubernetes'
	// defaults); 0 is none.
	InitializationPeriod, ReadinessDelay time.Duration
}

// Errors of Replicas: the metric cannot give a replica count this time
// (Kubernetes' FailedGetPodsMetric and FailedGetResourceMetric). Combine
// treats such a metric as blind: it blocks scale-down, not scale-up.
var (
	ErrNoPods        = errors.New("no pods returned by selector while calculating replica count")
	ErrNoSamples     = errors.New("did not receive metrics for targeted pods (pods might be unready)")
	ErrInvalidTarget = errors.New("target must be greater than 0")
)

// Rule says which step of the replica calculation gave the count.
type Rule uint8

// Rules of PodsResult.
const (
	// ruleScaled: ceil(ratio × ready pods with samples).
	ruleScaled Rule = iota
	// RuleWithinTolerance: the ratio is inside the tolerance band: current.
	RuleWithinTolerance
	// RuleRebalanced: missing or unready pods were filled in:
	// ceil(new ratio × size of the set).
	RuleRebalanced
	// RuleRebalancedWithinTolerance: the new ratio is inside the band: current.
	RuleRebalancedWithinTolerance
	// RuleDirectionFlip: filling in pods turned the ratio or the count the
	// other way: current.
	RuleDirectionFlip
)

// PodsResult is one metric's replica count and how it came about.
type PodsResult struct {
	Replicas int32
	// Usage is the first pass's per-pod average (AverageValue) or
	// utilization percent (Utilization), over the ready pods with samples.
	Usage float64
	// Ratio is Usage over the target; NewRatio the ratio after missing and
	// unready pods were filled in (equal to Ratio when they were not).
	Ratio, NewRatio float64
	// Ready, Unready, Missing and Ignored count the pods by group.
	Ready, Unready, Missing, Ignored int
	Rule                             Rule
}
