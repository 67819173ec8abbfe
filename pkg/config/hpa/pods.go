package hpa

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"ebb.dev/ebb/pkg/behavior"
)

// PodMetric is one pod's sample of a per-pod metric (concurrency, rps, or a
// custom metric) with an AverageValue target.
//
// Ready is carried for callers but, exactly as in Kubernetes, a Pods metric
// ignores readiness: only Pending pods count as unready (the Ready condition
// matters to cpu metrics alone; see behavior.Replicas).
type PodMetric struct {
	Name     string
	Phase    string   // "Pending", "Running", "Succeeded" or "Failed"
	Ready    bool     // the pod's Ready condition
	Deleting bool     // deletionTimestamp set
	Value    *float64 // nil: no sample for this pod
}

// Pod phases, as in k8s.io/api/core/v1.
const (
	PhasePending   = behavior.PhasePending
	PhaseRunning   = behavior.PhaseRunning
	PhaseSucceeded = behavior.PhaseSucceeded
	PhaseFailed    = behavior.PhaseFailed
)

// Tolerance is the band around 1.0 inside which the usage ratio does not
// scale, per direction (Kubernetes' default is 0.1 both ways; bounds are
// inclusive).
type Tolerance struct {
	ScaleUp, ScaleDown float64
}

// Within reports whether ratio is inside the band:
// 1-ScaleDown <= ratio <= 1+ScaleUp, both bounds inclusive.
func (t Tolerance) Within(ratio float64) bool {
	return behavior.Tolerance(t).Within(ratio)
}

// DefaultTolerance is kube-controller-manager's
// --horizontal-pod-autoscaler-tolerance, for both directions.
const DefaultTolerance = behavior.DefaultTolerance

// ToleranceFor is the tolerance a behavior asks for: behavior.scaleUp.tolerance
// and behavior.scaleDown.tolerance, each overriding only its own direction,
// DefaultTolerance where unset (and for a nil behavior).
func ToleranceFor(b *autoscalingv2.HorizontalPodAutoscalerBehavior) Tolerance {
	return Tolerance(behavior.ToleranceFor(ToBehavior(b)))
}

// Errors of PodsReplicas: the metric cannot give a replica count this time
// (Kubernetes' FailedGetPodsMetric). CombineRecommendations treats such a
// metric as blind: it blocks scale-down, not scale-up.
var (
	ErrNoPods        = behavior.ErrNoPods
	ErrNoSamples     = behavior.ErrNoSamples
	ErrInvalidTarget = behavior.ErrInvalidTarget
)

// ReplicasForPods is Kubernetes' replica calculation for a Pods metric with
// an AverageValue target: the usage ratio over ready pods with samples, then
// the missing-sample and unready-pod rules, the direction-flip rule and the
// tolerance band. Usage is the average over the ready pods with samples,
// before missing or unready pods are filled in.
//
// When no count can be computed (no pods, no usable sample, target <= 0) it
// returns current; PodsReplicas tells those cases apart.
func ReplicasForPods(current int32, pods []PodMetric, target float64, tol Tolerance) (replicas int32, usage float64) {
	replicas, usage, err := PodsReplicas(current, pods, target, tol)
	if err != nil {
		return current, usage
	}
	return replicas, usage
}

// PodsReplicas is ReplicasForPods with its error (ErrNoPods, ErrNoSamples,
// ErrInvalidTarget). It is behavior.Replicas with an AverageValue target
// (calcPlainMetricReplicas; see there for the steps).
func PodsReplicas(current int32, pods []PodMetric, target float64, tol Tolerance) (replicas int32, usage float64, err error) {
	converted := make([]behavior.PodMetric, len(pods))
	for i, p := range pods {
		converted[i] = behavior.PodMetric{Name: p.Name, Phase: p.Phase, Ready: p.Ready, Deleting: p.Deleting, Value: p.Value}
	}
	return behavior.PodsReplicas(current, converted, target, behavior.Tolerance(tol))
}
