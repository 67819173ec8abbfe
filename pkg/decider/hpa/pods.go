package hpa

import (
	"errors"
	"math"
	"math/big"
	"strconv"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// PodMetric is one pod's sample of a per-pod metric (concurrency, rps, or a
// custom metric) with an AverageValue target.
//
// Ready is carried for callers but, exactly as in Kubernetes, a Pods metric
// ignores readiness: only Pending pods count as unready (the Ready condition
// matters to cpu metrics alone, which this package does not compute).
type PodMetric struct {
	Name     string
	Phase    string   // "Pending", "Running", "Succeeded" or "Failed"
	Ready    bool     // the pod's Ready condition
	Deleting bool     // deletionTimestamp set
	Value    *float64 // nil: no sample for this pod
}

// Pod phases, as in k8s.io/api/core/v1.
const (
	PhasePending   = "Pending"
	PhaseRunning   = "Running"
	PhaseSucceeded = "Succeeded"
	PhaseFailed    = "Failed"
)

// Tolerance is the band around 1.0 inside which the usage ratio does not
// scale, per direction (Kubernetes' default is 0.1 both ways; bounds are
// inclusive).
type Tolerance struct {
	ScaleUp, ScaleDown float64
}

// DefaultTolerance is kube-controller-manager's
// --horizontal-pod-autoscaler-tolerance, for both directions.
const DefaultTolerance = 0.1

// ToleranceFor is the tolerance a behavior asks for: behavior.scaleUp.tolerance
// and behavior.scaleDown.tolerance, each overriding only its own direction,
// DefaultTolerance where unset (and for a nil behavior).
func ToleranceFor(b *autoscalingv2.HorizontalPodAutoscalerBehavior) Tolerance {
	t := Tolerance{ScaleUp: DefaultTolerance, ScaleDown: DefaultTolerance}
	if b == nil {
		return t
	}
	if b.ScaleUp != nil && b.ScaleUp.Tolerance != nil {
		t.ScaleUp = b.ScaleUp.Tolerance.AsApproximateFloat64()
	}
	if b.ScaleDown != nil && b.ScaleDown.Tolerance != nil {
		t.ScaleDown = b.ScaleDown.Tolerance.AsApproximateFloat64()
	}
	return t
}

// Within reports whether ratio is inside the band:
// 1-ScaleDown <= ratio <= 1+ScaleUp, both bounds inclusive.
func (t Tolerance) Within(ratio float64) bool {
	return 1.0-t.ScaleDown <= ratio && ratio <= 1.0+t.ScaleUp
}

// Errors of PodsReplicas: the metric cannot give a replica count this time
// (Kubernetes' FailedGetPodsMetric). CombineRecommendations treats such a
// metric as blind: it blocks scale-down, not scale-up.
var (
	ErrNoPods        = errors.New("no pods returned by selector while calculating replica count")
	ErrNoSamples     = errors.New("did not receive metrics for targeted pods (pods might be unready)")
	ErrInvalidTarget = errors.New("target average value must be greater than 0")
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
// ErrInvalidTarget). It follows calcPlainMetricReplicas:
//
//  1. Pods deleting or Failed are ignored; Pending pods are unready; pods
//     without a sample are missing; the rest are ready. Values and the target
//     are taken in integer milli-units, rounded away from zero as
//     Quantity.MilliValue does, and a NaN or infinite value counts as no
//     sample.
//  2. usage = (sum of ready samples) div (their count), in milli-units;
//     ratio = usage / target.
//  3. No missing pod, and not (unready pods and ratio > 1): current if the
//     ratio is within tolerance, else ceil(ratio * ready pods).
//  4. Otherwise missing pods are assumed at the target when ratio < 1 and at
//     0 when ratio > 1; unready pods at 0 when ratio > 1 (left out
//     otherwise). The ratio is recomputed on that set: current if it is
//     within tolerance or on the other side of 1 than the first ratio;
//     else ceil(newRatio * size of the set), unless that count moves against
//     newRatio's direction, in which case current.
//
// The count saturates at [0, MaxInt32] instead of wrapping.
func PodsReplicas(current int32, pods []PodMetric, target float64, tol Tolerance) (replicas int32, usage float64, err error) {
	if len(pods) == 0 {
		return current, 0, ErrNoPods
	}
	targetMilli, ok := toMilli(target)
	if !ok || targetMilli <= 0 {
		return current, 0, ErrInvalidTarget
	}
	g := groupPods(pods)
	if len(g.ready) == 0 {
		return current, 0, ErrNoSamples
	}
	usageMilli := averageMilli(g.ready)
	ratio := float64(usageMilli) / float64(targetMilli)
	usage = float64(usageMilli) / 1000

	scaleUpWithUnready := g.unready > 0 && ratio > 1.0
	if !scaleUpWithUnready && g.missing == 0 {
		if tol.Within(ratio) {
			return current, usage, nil
		}
		return ceilReplicas(ratio * float64(len(g.ready))), usage, nil
	}
	return rebalance(current, g, ratio, targetMilli, tol), usage, nil
}

// podGroups is groupPods' result for a per-pod metric: the samples of the
// ready pods, and how many pods are unready or missing a sample.
type podGroups struct {
	ready            []int64 // milli-values
	unready, missing int
}

func groupPods(pods []PodMetric) podGroups {
	var g podGroups
	for _, p := range pods {
		switch {
		case p.Deleting || p.Phase == PhaseFailed:
			continue // ignored: never counted
		case p.Phase == PhasePending:
			g.unready++
			continue
		}
		v, ok := sampleMilli(p.Value)
		if !ok {
			g.missing++
			continue
		}
		g.ready = append(g.ready, v)
	}
	return g
}

// rebalance is the conservative pass of calcPlainMetricReplicas (step 4).
func rebalance(current int32, g podGroups, ratio float64, targetMilli int64, tol Tolerance) int32 {
	samples := append([]int64(nil), g.ready...)
	if g.missing > 0 {
		fill := int64(-1)
		switch {
		case ratio < 1.0:
			fill = targetMilli // on a scale-down a missing pod is at the target
		case ratio > 1.0:
			fill = 0 // on a scale-up it uses nothing
		}
		for i := 0; fill >= 0 && i < g.missing; i++ {
			samples = append(samples, fill)
		}
	}
	if g.unready > 0 && ratio > 1.0 {
		for i := 0; i < g.unready; i++ {
			samples = append(samples, 0)
		}
	}
	newRatio := float64(averageMilli(samples)) / float64(targetMilli)
	if tol.Within(newRatio) || (ratio < 1.0 && newRatio > 1.0) || (ratio > 1.0 && newRatio < 1.0) {
		return current // too small a change, or the direction flipped
	}
	newReplicas := ceilReplicas(newRatio * float64(len(samples)))
	if (newRatio < 1.0 && newReplicas > current) || (newRatio > 1.0 && newReplicas < current) {
		return current // the recount moves against the ratio's direction
	}
	return newReplicas
}

// averageMilli is GetMetricUsageRatio's average: integer division of the sum
// (saturating) by the count.
func averageMilli(samples []int64) int64 {
	var sum int64
	for _, v := range samples {
		switch {
		case v > 0 && sum > math.MaxInt64-v:
			sum = math.MaxInt64
		case v < 0 && sum < math.MinInt64-v:
			sum = math.MinInt64
		default:
			sum += v
		}
	}
	return sum / int64(len(samples))
}

func sampleMilli(v *float64) (int64, bool) {
	if v == nil {
		return 0, false
	}
	return toMilli(*v)
}

// maxMilli bounds a converted value so that sums and ratios stay well inside
// int64 and float64's exact integers.
const maxMilli = 1 << 53

// toMilli converts v to integer milli-units as a Quantity parsed from v's
// shortest decimal form would give with MilliValue: exactly, rounded away
// from zero (0.1 is 100, 20.6665 is 20667, 0.0001 is 1). It saturates at
// ±2^53 and refuses NaN and infinities.
func toMilli(v float64) (int64, bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	if math.Abs(v) >= maxMilli/1000 {
		return int64(math.Copysign(maxMilli, v)), true
	}
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(v, 'g', -1, 64))
	if !ok {
		return 0, false
	}
	r.Mul(r, big.NewRat(1000, 1))
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(int64(m.Sign()))) // away from zero
	}
	return q.Int64(), true
}

// ceilReplicas is int32(math.Ceil(x)), saturating at [0, MaxInt32].
func ceilReplicas(x float64) int32 {
	c := math.Ceil(x)
	switch {
	case math.IsNaN(c) || c <= 0:
		return 0
	case c >= math.MaxInt32:
		return math.MaxInt32
	}
	return int32(c)
}
