package behavior

import "math"

// Replicas is Kubernetes' replica calculation for one metric from per-pod
// samples (calcPlainMetricReplicas for AverageValue, GetResourceReplicas for
// Utilization):
//
//  1. Pods deleting or Failed are ignored; Pending pods are unready; pods
//     without a sample are missing; for cpu, pods that fail the readiness
//     rules are unready; the rest are ready. Values are taken in integer
//     milli-units, rounded away from zero as Quantity.MilliValue does, and a
//     NaN or infinite value counts as no sample.
//  2. usage = (sum of ready samples) div (their count), in milli-units for
//     AverageValue, truncated to a whole percent for Utilization;
//     ratio = usage / target.
//  3. No missing pod, and not (unready pods and ratio > 1): current if the
//     ratio is within tolerance, else ceil(ratio * ready pods).
//  4. Otherwise missing pods are assumed at the target (Utilization: at
//     max(100%, target)) when ratio < 1 and at 0 when ratio > 1; unready
//     pods at 0 when ratio > 1 (left out otherwise). The ratio is
//     recomputed on that set: current if it is within tolerance or on the
//     other side of 1 than the first ratio; else ceil(newRatio * size of the
//     set), unless that count moves against newRatio's direction, in which
//     case current.
//
// It fails with ErrNoPods, ErrNoSamples or ErrInvalidTarget when no count
// can be computed; the result then holds current. The count saturates at
// [0, MaxInt32] instead of wrapping.
func Replicas(current int32, pods []PodMetric, t Target, tol Tolerance) (PodsResult, error) {
	res := PodsResult{Replicas: current}
	if len(pods) == 0 {
		return res, ErrNoPods
	}
	a, ok := arithmeticFor(t)
	if !ok {
		return res, ErrInvalidTarget
	}
	var buf [16]int64 // the ready samples of most revisions: on the stack
	g := groupPods(pods, t, buf[:0])
	res.Ready, res.Unready, res.Missing, res.Ignored = len(g.ready), g.unready, g.missing, g.ignored
	if len(g.ready) == 0 {
		return res, ErrNoSamples
	}
	res.Ratio, res.Usage = a.ratio(g.ready)
	res.NewRatio = res.Ratio

	scaleUpWithUnready := g.unready > 0 && res.Ratio > 1.0
	if !scaleUpWithUnready && g.missing == 0 {
		if tol.Within(res.Ratio) {
			res.Rule = RuleWithinTolerance
			return res, nil
		}
		res.Replicas, res.Rule = ceilReplicas(res.Ratio*float64(len(g.ready))), ruleScaled
		return res, nil
	}
	rebalance(current, g, a, tol, &res)
	return res, nil
}

// PodsReplicas is Replicas for an AverageValue target: the count, the
// per-pod average, and the error.
func PodsReplicas(current int32, pods []PodMetric, target float64, tol Tolerance) (int32, float64, error) {
	res, err := Replicas(current, pods, Target{Kind: AverageValue, Value: target}, tol)
	return res.Replicas, res.Usage, err
}

// arithmetic is the integer arithmetic of one target kind, in milli-units.
type arithmetic struct {
	kind   TargetKind
	target int64 // milli-units (AverageValue) or whole percent (Utilization)
	fill   int64 // what a missing pod is assumed at on a scale-down, in milli-units
}

func arithmeticFor(t Target) (arithmetic, bool) {
	if t.Kind == Utilization {
		pct := math.Ceil(t.Value)
		if !(pct >= 1 && pct <= maxMilli/1000) {
			return arithmetic{}, false
		}
		return arithmetic{kind: Utilization, target: int64(pct), fill: int64(max(100, pct)) * 1000}, true
	}
	m, ok := ToMilli(t.Value)
	if !ok || m <= 0 {
		return arithmetic{}, false
	}
	return arithmetic{kind: AverageValue, target: m, fill: m}, true
}

// ratio is GetMetricUsageRatio (integer average in milli-units over the
// target) or GetResourceUtilizationRatio (integer percent over the target),
// and the usage it reports.
func (a arithmetic) ratio(samples []int64) (ratio, usage float64) {
	sum := sumMilli(samples)
	if a.kind == Utilization {
		util := sum / (int64(len(samples)) * 1000)
		return float64(util) / float64(a.target), float64(util)
	}
	avg := sum / int64(len(samples))
	return float64(avg) / float64(a.target), float64(avg) / 1000
}

// podGroups is groupPods' result: the samples of the ready pods, and how
// many pods are unready, missing a sample, or ignored.
type podGroups struct {
	ready                     []int64 // milli-units
	unready, missing, ignored int
}

func groupPods(pods []PodMetric, t Target, ready []int64) podGroups {
	g := podGroups{ready: ready}
	for i := range pods {
		p := &pods[i]
		switch {
		case p.Deleting || p.Phase == PhaseFailed:
			g.ignored++ // never counted
			continue
		case p.Phase == PhasePending:
			g.unready++
			continue
		}
		v, ok := sampleMilli(p.Value)
		switch {
		case !ok:
			g.missing++
		case t.CPU && cpuUnready(p, t):
			g.unready++
		default:
			g.ready = append(g.ready, v)
		}
	}
	return g
}

// cpuUnready is groupPods' cpu rule. A pod without a start time or a Ready
// condition is unready. While it initializes (started less than
// Target.InitializationPeriod ago) it is unready unless it is Ready and its
// sample covers a full window since the Ready condition last changed;
// afterwards it is unready only if it is not Ready and never was (its
// condition last changed within Target.ReadinessDelay of its start).
func cpuUnready(p *PodMetric, t Target) bool {
	if p.Started.IsZero() || p.ReadySince.IsZero() {
		return true
	}
	if p.Started.Add(t.InitializationPeriod).After(t.Now) {
		return !p.Ready || t.Now.Before(p.ReadySince.Add(t.Window))
	}
	return !p.Ready && p.Started.Add(t.ReadinessDelay).After(p.ReadySince)
}

// rebalance is the conservative pass (step 4).
func rebalance(current int32, g podGroups, a arithmetic, tol Tolerance, res *PodsResult) {
	samples := append([]int64(nil), g.ready...)
	ratio := res.Ratio
	if g.missing > 0 && ratio != 1.0 {
		fill := a.fill // on a scale-down a missing pod is at the target
		if ratio > 1.0 {
			fill = 0 // on a scale-up it uses nothing
		}
		for range g.missing {
			samples = append(samples, fill)
		}
	}
	if g.unready > 0 && ratio > 1.0 {
		for range g.unready {
			samples = append(samples, 0)
		}
	}
	newRatio, _ := a.ratio(samples)
	res.NewRatio = newRatio
	switch {
	case tol.Within(newRatio):
		res.Rule = RuleRebalancedWithinTolerance
		return
	case (ratio < 1.0 && newRatio > 1.0) || (ratio > 1.0 && newRatio < 1.0):
		res.Rule = RuleDirectionFlip
		return
	}
	n := ceilReplicas(newRatio * float64(len(samples)))
	if (newRatio < 1.0 && n > current) || (newRatio > 1.0 && n < current) {
		res.Rule = RuleDirectionFlip // the recount moves against the ratio's direction
		return
	}
	res.Replicas, res.Rule = n, RuleRebalanced
}

// sumMilli adds samples, saturating.
func sumMilli(samples []int64) int64 {
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
	return sum
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
