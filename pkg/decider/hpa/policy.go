package hpa

import (
	"fmt"
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// rateInput is what convertDesiredReplicasWithBehaviorRate looks at.
type rateInput struct {
	now                  time.Time
	current, stabilized  int32
	min, max             int32
	up, down             *autoscalingv2.HPAScalingRules // defaulted
	scaleUps, scaleDowns []ScaleEvent
}

// limited is the outcome of the rate-limit step.
type limited struct {
	replicas int32
	reason   string // a ScalingLimited reason
	message  string
}

// limitRate is convertDesiredReplicasWithBehaviorRate: the policies of the
// direction the stabilized value moves in, then min/max. When the stabilized
// value equals current nothing is clamped (the caller guarantees
// min <= current <= max).
func limitRate(in rateInput) limited {
	switch {
	case in.stabilized > in.current:
		return limitUp(in)
	case in.stabilized < in.current:
		return limitDown(in)
	}
	return withinRange(in.stabilized)
}

// limitUp caps a scale-up at min(max, policy limit); the policy limit never
// drops below current, so it stops a scale-up but never forces a scale-down.
func limitUp(in rateInput) limited {
	limit := max(scaleUpLimit(in), int64(in.current))
	maxAllowed, reason := int64(in.max), ReasonTooManyReplicas
	if int64(in.max) > limit {
		maxAllowed, reason = limit, ReasonScaleUpLimit
	}
	if int64(in.stabilized) <= maxAllowed {
		return withinRange(in.stabilized)
	}
	if reason == ReasonTooManyReplicas {
		return limited{int32(maxAllowed), reason, fmt.Sprintf(
			"the desired replica count is more than the maximum replica count: %d capped at max %d", in.stabilized, maxAllowed)}
	}
	return limited{int32(maxAllowed), reason, fmt.Sprintf(
		"the desired replica count is increasing faster than the maximum scale rate: %d capped at %d by the scaleUp policies (selectPolicy %s)",
		in.stabilized, maxAllowed, selectPolicyOf(in.up))}
}

// limitDown raises a scale-down to max(min, policy floor); the floor never
// rises above current.
func limitDown(in rateInput) limited {
	floor := min(scaleDownLimit(in), int64(in.current))
	minAllowed, reason := int64(in.min), ReasonTooFewReplicas
	if int64(in.min) < floor {
		minAllowed, reason = floor, ReasonScaleDownLimit
	}
	if int64(in.stabilized) >= minAllowed {
		return withinRange(in.stabilized)
	}
	if reason == ReasonTooFewReplicas {
		return limited{int32(minAllowed), reason, fmt.Sprintf(
			"the desired replica count is less than the minimum replica count: %d raised to min %d", in.stabilized, minAllowed)}
	}
	return limited{int32(minAllowed), reason, fmt.Sprintf(
		"the desired replica count is decreasing faster than the maximum scale rate: %d raised to %d by the scaleDown policies (selectPolicy %s)",
		in.stabilized, minAllowed, selectPolicyOf(in.down))}
}

func withinRange(replicas int32) limited {
	return limited{replicas, ReasonDesiredWithinRange,
		fmt.Sprintf("the desired count %d is within the acceptable range", replicas)}
}

// scaleUpLimit is calculateScaleUpLimitWithScalingRules. Each policy proposes
// periodStart+value (Pods) or ceil(periodStart*(1+value/100)) (Percent, in
// float64 as Kubernetes does, so 100 at 10% gives 111); Max takes the largest
// proposal, Min the smallest, Disabled pins current. With no policy the
// starting value stands, as in Kubernetes (MinInt32 for Max, so current after
// the caller's floor; MaxInt32 for Min, so only max binds).
func scaleUpLimit(in rateInput) int64 {
	sel := selectPolicyOf(in.up)
	if sel == autoscalingv2.DisabledPolicySelect {
		return int64(in.current)
	}
	result, pick := int64(math.MinInt32), maxInt64
	if sel == autoscalingv2.MinChangePolicySelect {
		result, pick = int64(math.MaxInt32), minInt64
	}
	for _, p := range policiesOf(in.up) {
		start := periodStart(in, p.PeriodSeconds)
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			result = pick(result, start+int64(p.Value))
		case autoscalingv2.PercentScalingPolicy:
			result = pick(result, floatToInt64(math.Ceil(float64(start)*(1+float64(p.Value)/100))))
		}
	}
	return result
}

// scaleDownLimit is calculateScaleDownLimitWithBehaviors. Each policy
// proposes a floor: periodStart-value (Pods) or
// trunc(periodStart*(1-value/100)) (Percent, float64, truncated, so the
// number of pods that may go is rounded up). Max takes the lowest floor (the
// biggest change), Min the highest, Disabled pins current.
func scaleDownLimit(in rateInput) int64 {
	sel := selectPolicyOf(in.down)
	if sel == autoscalingv2.DisabledPolicySelect {
		return int64(in.current)
	}
	result, pick := int64(math.MaxInt32), minInt64
	if sel == autoscalingv2.MinChangePolicySelect {
		result, pick = int64(math.MinInt32), maxInt64
	}
	for _, p := range policiesOf(in.down) {
		start := periodStart(in, p.PeriodSeconds)
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			result = pick(result, start-int64(p.Value))
		case autoscalingv2.PercentScalingPolicy:
			result = pick(result, floatToInt64(math.Trunc(float64(start)*(1-float64(p.Value)/100))))
		}
	}
	return result
}

// periodStart is the replica count at the start of a policy period:
// current - replicas added + replicas removed by the events strictly younger
// than the period (an event exactly periodSeconds old is outside). Both event
// lists count, whichever way the count moves now.
func periodStart(in rateInput, periodSeconds int32) int64 {
	cutoff := in.now.Add(-seconds(periodSeconds))
	return int64(in.current) - changeSince(in.scaleUps, cutoff) + changeSince(in.scaleDowns, cutoff)
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

// selectPolicyOf is the direction's selectPolicy, Max when unset (the
// default).
func selectPolicyOf(rules *autoscalingv2.HPAScalingRules) autoscalingv2.ScalingPolicySelect {
	if rules == nil || rules.SelectPolicy == nil {
		return autoscalingv2.MaxChangePolicySelect
	}
	return *rules.SelectPolicy
}

func policiesOf(rules *autoscalingv2.HPAScalingRules) []autoscalingv2.HPAScalingPolicy {
	if rules == nil {
		return nil
	}
	return rules.Policies
}

func maxInt64(a, b int64) int64 { return max(a, b) }
func minInt64(a, b int64) int64 { return min(a, b) }

// floatToInt64 converts a whole float64, saturating instead of relying on
// Go's implementation-defined out-of-range conversion (Kubernetes converts to
// int32 and would wrap; valid inputs never get near either bound).
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
