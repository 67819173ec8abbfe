package behavior

import (
	"math"
	"time"
)

// limitRate is convertDesiredReplicasWithBehaviorRate: the policies of the
// direction the stabilized value moves in, then min/max. When the
// stabilized value equals current nothing is clamped (the caller
// guarantees min <= current <= max).
func limitRate(in Input, up, down effective, r *Result) {
	s := r.StabilizedReplicas
	switch {
	case s > in.Current:
		r.Select = up.sel
		limitUp(in, up, r)
	case s < in.Current:
		r.Select = down.sel
		limitDown(in, down, r)
	default:
		r.Replicas, r.Limit = s, ReasonDesiredWithinRange
	}
}

// limitUp caps a scale-up at min(max, policy limit); the policy limit never
// drops below current, so it stops a scale-up but never forces a scale-down.
func limitUp(in Input, up effective, r *Result) {
	limit := max(scaleUpLimit(in, up), int64(in.Current))
	maxAllowed, reason := int64(in.Max), ReasonTooManyReplicas
	if int64(in.Max) > limit {
		maxAllowed, reason = limit, ReasonScaleUpLimit
	}
	r.Replicas, r.Limit = r.StabilizedReplicas, ReasonDesiredWithinRange
	if int64(r.StabilizedReplicas) > maxAllowed {
		r.Replicas, r.Limit = int32(maxAllowed), reason
	}
}

// limitDown raises a scale-down to max(min, policy floor); the floor never
// rises above current.
func limitDown(in Input, down effective, r *Result) {
	floor := min(scaleDownLimit(in, down), int64(in.Current))
	minAllowed, reason := int64(in.Min), ReasonTooFewReplicas
	if int64(in.Min) < floor {
		minAllowed, reason = floor, ReasonScaleDownLimit
	}
	r.Replicas, r.Limit = r.StabilizedReplicas, ReasonDesiredWithinRange
	if int64(r.StabilizedReplicas) < minAllowed {
		r.Replicas, r.Limit = int32(minAllowed), reason
	}
}

// scaleUpLimit is calculateScaleUpLimitWithScalingRules. Each policy proposes
// periodStart+value (Pods) or ceil(periodStart*(1+value/100)) (Percent, in
// float64 as Kubernetes does, so 100 at 10% gives 111); Max takes the
// largest proposal, Min the smallest, Disabled pins current. With no policy
// the starting value stands, as in Kubernetes (MinInt32 for Max, so current
// after the caller's floor; MaxInt32 for Min, so only max binds).
func scaleUpLimit(in Input, up effective) int64 {
	if up.sel == Disabled {
		return int64(in.Current)
	}
	minSel := up.sel == Min
	result := int64(math.MinInt32)
	if minSel {
		result = math.MaxInt32
	}
	for _, p := range up.policies {
		start := periodStart(in, p.PeriodSeconds)
		var v int64
		switch p.Type {
		case Pods:
			v = start + int64(p.Value)
		case Percent:
			v = floatToInt64(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		default:
			continue
		}
		result = pick(result, v, minSel)
	}
	return result
}

// scaleDownLimit is calculateScaleDownLimitWithBehaviors. Each policy
// proposes a floor: periodStart-value (Pods) or
// trunc(periodStart*(1-value/100)) (Percent, float64, truncated, so the
// number of pods that may go is rounded up). Max takes the lowest floor (the
// biggest change), Min the highest, Disabled pins current.
func scaleDownLimit(in Input, down effective) int64 {
	if down.sel == Disabled {
		return int64(in.Current)
	}
	minSel := down.sel == Min
	result := int64(math.MaxInt32)
	if minSel {
		result = math.MinInt32
	}
	for _, p := range down.policies {
		start := periodStart(in, p.PeriodSeconds)
		var v int64
		switch p.Type {
		case Pods:
			v = start - int64(p.Value)
		case Percent:
			v = floatToInt64(math.Trunc(float64(start) * (1 - float64(p.Value)/100)))
		default:
			continue
		}
		result = pick(result, v, !minSel) // the lowest floor is the biggest change
	}
	return result
}

// pick keeps the larger of a and b (the biggest change), or the smaller
// with minSel.
func pick(a, b int64, minSel bool) int64 {
	if minSel {
		return min(a, b)
	}
	return max(a, b)
}

// periodStart is the replica count at the start of a policy period:
// current - replicas added + replicas removed by the events strictly younger
// than the period (an event exactly periodSeconds old is outside). Both
// event lists count, whichever way the count moves now.
func periodStart(in Input, periodSeconds int32) int64 {
	cutoff := in.Now.Add(-seconds(periodSeconds))
	return int64(in.Current) - changeSince(in.ScaleUps, cutoff) + changeSince(in.ScaleDowns, cutoff)
}

// changeSince is getReplicasChangePerPeriod: the sum of the changes of the
// events after cutoff.
func changeSince(events []ScaleEvent, cutoff time.Time) int64 {
	var sum int64
	for _, e := range events {
		if e.At.After(cutoff) {
			sum += int64(e.Change)
		}
	}
	return sum
}

// floatToInt64 converts a whole float64, saturating instead of relying on
// Go's implementation-defined out-of-range conversion (Kubernetes converts
// to int32 and would wrap; valid inputs never get near either bound).
func floatToInt64(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}
