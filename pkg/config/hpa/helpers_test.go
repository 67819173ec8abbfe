package hpa

import (
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
)

// t0 is "now" in every test: time is an argument, no test reads a clock.
var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) time.Time { return t0.Add(-d) }

func secs(n float64) time.Duration { return time.Duration(n * float64(time.Second)) }

// rules mirrors horizontal_test.go's generateScalingRules: a Pods policy
// when pods != 0, a Percent policy when percent != 0, selectPolicy Max.
func rules(pods, podsPeriod, percent, percentPeriod, window int32) *autoscalingv2.HPAScalingRules {
	r := &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptr(window),
		SelectPolicy:               ptr(autoscalingv2.MaxChangePolicySelect),
	}
	if pods != 0 {
		r.Policies = append(r.Policies, podsPolicy(pods, podsPeriod))
	}
	if percent != 0 {
		r.Policies = append(r.Policies, percentPolicy(percent, percentPeriod))
	}
	return r
}

func podsPolicy(value, period int32) autoscalingv2.HPAScalingPolicy {
	return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: value, PeriodSeconds: period}
}

func percentPolicy(value, period int32) autoscalingv2.HPAScalingPolicy {
	return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: value, PeriodSeconds: period}
}

// selecting returns rules with the given selectPolicy and policies.
func selecting(sel autoscalingv2.ScalingPolicySelect, window int32, ps ...autoscalingv2.HPAScalingPolicy) *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr(window), SelectPolicy: ptr(sel), Policies: ps}
}

// uniformEvents mirrors generateEventsUniformDistribution: the events spread
// evenly over the last periodSeconds, each in the middle of its segment,
// oldest first.
func uniformEvents(changes []int32, periodSeconds float64) []ScaleEvent {
	events := make([]ScaleEvent, len(changes))
	seg := periodSeconds / float64(len(changes))
	for i, c := range changes {
		events[i] = ScaleEvent{At: ago(secs(periodSeconds - seg*float64(i+1) + seg/2)), Change: c}
	}
	return events
}

func quantity(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

func f64(v float64) *float64 { return &v }

// outcome is the part of a BehaviorResult that tables compare; Message is
// checked separately (it is for people).
type outcome struct {
	Replicas   int32
	Limit      string
	Stabilized string
}

func outcomeOf(r BehaviorResult) outcome { return outcome{r.Replicas, r.Limit, r.Stabilized} }
