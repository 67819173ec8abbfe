package hpa

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// TestRateLimits mirrors horizontal_test.go's TestScalingWithRules: no
// recommendations, so stabilization passes Desired through and only the
// policies and min/max act.
func TestRateLimits(t *testing.T) {
	tests := []struct {
		name                    string
		up, down                *autoscalingv2.HPAScalingRules
		ups, downs              []ScaleEvent
		min, max, current, want int32
		desired                 int32
		limit                   string
	}{
		{name: "within range", min: 3, max: 8, current: 5, desired: 7, want: 7, limit: ReasonDesiredWithinRange},
		{name: "below min", min: 2, max: 8, current: 3, desired: 1, want: 2, limit: ReasonTooFewReplicas},
		{name: "zero within range when min is 0", min: 0, max: 10, current: 1, desired: 0, want: 0, limit: ReasonDesiredWithinRange},
		{name: "more than max", min: 100, max: 150, current: 100, desired: 1000, want: 150, limit: ReasonTooManyReplicas},
		{name: "1% policy still allows +1", up: rules(0, 0, 1, 60, 0), min: 1, max: 2000, current: 3, desired: 1000, want: 4, limit: ReasonScaleUpLimit},
		{name: "pods policy floor above min", down: rules(20, 60, 0, 0, 0), min: 3, max: 2000, current: 1000, desired: 3, want: 980, limit: ReasonScaleDownLimit},
		{name: "default scale-up: max(10+4, 2*10)", min: 1, max: 1000, current: 10, desired: 50, want: 20, limit: ReasonScaleUpLimit},
		{name: "pods policy larger than percent", up: rules(100, 60, 100, 60, 0), min: 1, max: 1000, current: 10, desired: 500, want: 110, limit: ReasonScaleUpLimit},
		{name: "percent policy larger than pods", up: rules(2, 60, 100, 60, 0), min: 1, max: 1000, current: 10, desired: 500, want: 20, limit: ReasonScaleUpLimit},
		{name: "large pods policy does not bind", up: rules(100, 60, 0, 0, 0), min: 1, max: 1000, current: 10, desired: 50, want: 50,
			limit: ReasonDesiredWithinRange},
		{name: "large percent policy does not bind", up: rules(0, 0, 10000, 60, 0), min: 1, max: 1000, current: 10, desired: 50, want: 50,
			limit: ReasonDesiredWithinRange},
		{name: "pods policy binds", up: rules(30, 60, 0, 0, 0), min: 1, max: 1000, current: 10, desired: 50, want: 40, limit: ReasonScaleUpLimit},
		{name: "percent policy binds", up: rules(0, 0, 200, 60, 0), min: 1, max: 1000, current: 10, desired: 50, want: 30, limit: ReasonScaleUpLimit},
		{name: "down: percent larger than pods", down: rules(20, 60, 1, 60, 300), min: 1, max: 1000, current: 100, desired: 2, want: 80, limit: ReasonScaleDownLimit},
		{name: "down: pods larger than percent", down: rules(2, 60, 1, 60, 300), min: 1, max: 1000, current: 100, desired: 2, want: 98, limit: ReasonScaleDownLimit},
		{name: "down: min binds large pods policy", down: rules(100, 60, 0, 0, 300), min: 1, max: 1000, current: 10, desired: 0, want: 1,
			limit: ReasonTooFewReplicas},
		{name: "down: min binds large percent policy", down: rules(0, 0, 100, 60, 300), min: 5, max: 1000, current: 10, desired: 2, want: 5,
			limit: ReasonTooFewReplicas},
		{name: "down: pods policy binds", down: rules(5, 60, 0, 0, 300), min: 1, max: 1000, current: 10, desired: 2, want: 5, limit: ReasonScaleDownLimit},
		{name: "down: percent policy allows desired", down: rules(0, 0, 50, 60, 300), min: 1, max: 1000, current: 10, desired: 5, want: 5,
			limit: ReasonDesiredWithinRange},
		// With PeriodSeconds and previous events.
		{name: "events: max binds before pods policy", ups: uniformEvents([]int32{1, 5, 9}, 120), up: rules(300, 60, 0, 0, 0), min: 1, max: 200, current: 100,
			desired: 500, want: 200, limit: ReasonTooManyReplicas},
		{name: "events: max binds before percent policy", ups: uniformEvents([]int32{1, 5, 9}, 120), up: rules(0, 0, 10000, 60, 0), min: 1, max: 200, current: 100,
			desired: 500, want: 200, limit: ReasonTooManyReplicas},
		{name: "events: limit below current is raised to current", ups: uniformEvents([]int32{1, 5, 9}, 120), up: rules(5, 120, 0, 0, 0), min: 1, max: 1000,
			current: 100, desired: 500, want: 100, limit: ReasonScaleUpLimit},
		{name: "events: pods policy from period start 85", ups: uniformEvents([]int32{1, 5, 9}, 120), up: rules(150, 120, 0, 0, 0), min: 1, max: 1000, current: 100,
			desired: 500, want: 235, limit: ReasonScaleUpLimit},
		{name: "events: percent policy from period start 85", ups: uniformEvents([]int32{1, 5, 9}, 120), up: rules(0, 0, 200, 120, 0), min: 1, max: 1000,
			current: 100, desired: 500, want: 255, limit: ReasonScaleUpLimit},
		{name: "events: default scale-down policy", downs: uniformEvents([]int32{1, 5, 9}, 120), min: 1, max: 1000, current: 10, desired: 5, want: 5,
			limit: ReasonDesiredWithinRange},
		{name: "events: down to min with pods policy", downs: uniformEvents([]int32{1, 5, 9}, 120), down: rules(115, 120, 0, 0, 300), min: 1, max: 1000,
			current: 100, desired: 0, want: 1, limit: ReasonTooFewReplicas},
		{name: "events: down to min 5 with pods policy", downs: uniformEvents([]int32{1, 5, 9}, 120), down: rules(130, 120, 0, 0, 300), min: 5, max: 1000,
			current: 100, desired: 0, want: 5, limit: ReasonTooFewReplicas},
		{name: "events: 100% down is limited by min", downs: uniformEvents([]int32{1, 5, 9}, 120), down: rules(0, 0, 100, 120, 300), min: 5, max: 1000, current: 100,
			desired: 2, want: 5, limit: ReasonTooFewReplicas},
		{name: "events: floor above current is lowered to current", downs: uniformEvents([]int32{1, 5, 9}, 120), down: rules(5, 120, 0, 0, 300), min: 1, max: 1000,
			current: 100, desired: 2, want: 100, limit: ReasonScaleDownLimit},
		{name: "events: percent down from period start 112", downs: uniformEvents([]int32{2, 4, 6}, 120), down: rules(0, 0, 50, 120, 300), min: 1, max: 1000,
			current: 100, desired: 0, want: 56, limit: ReasonScaleDownLimit},
		{name: "events: 117 > 100 keeps 100", downs: uniformEvents([]int32{10, 10, 10}, 120), down: rules(0, 0, 10, 120, 300), min: 1, max: 1000, current: 100,
			desired: 0, want: 100, limit: ReasonScaleDownLimit},
		{name: "events: negative floor is harmless", downs: uniformEvents([]int32{10, 10, 10}, 120), down: rules(0, 0, 1000, 120, 300), min: 1, max: 1000,
			current: 10, desired: 5, want: 5, limit: ReasonDesiredWithinRange},
		{name: "events: half outside a 60s period", ups: uniformEvents([]int32{8, 12, 9, 11}, 120), up: rules(1000, 60, 0, 0, 0), min: 1, max: 1000, current: 100,
			desired: 200, want: 200, limit: ReasonDesiredWithinRange},
		{name: "events: two periods up", ups: uniformEvents([]int32{8, 12, 9, 11}, 120), up: rules(1000, 120, 100, 60, 0), min: 1, max: 1000, current: 100,
			desired: 200, want: 200, limit: ReasonDesiredWithinRange},
		{name: "events: two periods down", downs: uniformEvents([]int32{8, 12, 9, 11}, 120), down: rules(1000, 120, 100, 60, 300), min: 1, max: 1000, current: 100,
			desired: 5, want: 5, limit: ReasonDesiredWithinRange},
		// Both event lists count, whichever way the count moves now.
		{name: "scale-up counts recent scale-downs", downs: []ScaleEvent{{ago(10 * time.Second), 6}}, up: rules(4, 60, 0, 0, 0), min: 1, max: 100, current: 10,
			desired: 50, want: 20, limit: ReasonScaleUpLimit},
		{name: "scale-down counts recent scale-ups", ups: []ScaleEvent{{ago(10 * time.Second), 6}}, down: rules(4, 60, 0, 0, 0), min: 1, max: 100, current: 10,
			desired: 0, want: 1, limit: ReasonTooFewReplicas},
		{name: "scale-down after scale-up: floor 16-4", ups: []ScaleEvent{{ago(10 * time.Second), 6}}, down: rules(4, 60, 0, 0, 0), min: 1, max: 100, current: 16,
			desired: 1, want: 6, limit: ReasonScaleDownLimit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := NormalizeBehavior(BehaviorInput{
				Now: t0, Current: tc.current, Min: tc.min, Max: tc.max, Desired: tc.desired,
				Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: tc.up, ScaleDown: tc.down},
				ScaleUps: tc.ups, ScaleDowns: tc.downs,
			})
			want := outcome{tc.want, tc.limit, ReasonReadyForNewScale}
			if diff := cmp.Diff(want, outcomeOf(got)); diff != "" {
				t.Errorf("NormalizeBehavior() mismatch (-want +got):\n%s\nmessage: %s", diff, got.Message)
			}
		})
	}
}

// TestSelectPolicy checks Max (largest change), Min (smallest) and Disabled
// (current) in both directions, where Max and Min reverse on the way down.
func TestSelectPolicy(t *testing.T) {
	upPolicies := []autoscalingv2.HPAScalingPolicy{podsPolicy(4, 60), percentPolicy(50, 60)}   // from 20: 24 or 30
	downPolicies := []autoscalingv2.HPAScalingPolicy{podsPolicy(4, 60), percentPolicy(50, 60)} // from 20: 16 or 10
	tests := []struct {
		name    string
		sel     autoscalingv2.ScalingPolicySelect
		desired int32
		want    outcome
	}{
		{"up Max: largest change", autoscalingv2.MaxChangePolicySelect, 100, outcome{30, ReasonScaleUpLimit, ReasonReadyForNewScale}},
		{"up Min: smallest change", autoscalingv2.MinChangePolicySelect, 100, outcome{24, ReasonScaleUpLimit, ReasonReadyForNewScale}},
		{"up Disabled: current", autoscalingv2.DisabledPolicySelect, 100, outcome{20, ReasonScaleUpLimit, ReasonReadyForNewScale}},
		{"down Max: lowest floor", autoscalingv2.MaxChangePolicySelect, 1, outcome{10, ReasonScaleDownLimit, ReasonReadyForNewScale}},
		{"down Min: highest floor", autoscalingv2.MinChangePolicySelect, 1, outcome{16, ReasonScaleDownLimit, ReasonReadyForNewScale}},
		{"down Disabled: current", autoscalingv2.DisabledPolicySelect, 1, outcome{20, ReasonScaleDownLimit, ReasonReadyForNewScale}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp:   selecting(tc.sel, 0, upPolicies...),
				ScaleDown: selecting(tc.sel, 0, downPolicies...),
			}
			got := NormalizeBehavior(BehaviorInput{Now: t0, Current: 20, Min: 1, Max: 1000, Desired: tc.desired, Behavior: b})
			if diff := cmp.Diff(tc.want, outcomeOf(got)); diff != "" {
				t.Errorf("NormalizeBehavior() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPeriodBoundary: an event exactly periodSeconds old is outside the
// period; a nanosecond younger is inside.
func TestPeriodBoundary(t *testing.T) {
	tests := []struct {
		name string
		age  time.Duration
		want int32
	}{
		{"exactly the period old: outside", 60 * time.Second, 14},
		{"1ns younger: inside", 60*time.Second - 1, 10},
		{"older: outside", 61 * time.Second, 14},
		{"in the future: inside", -time.Second, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := NormalizeBehavior(BehaviorInput{
				Now: t0, Current: 10, Min: 1, Max: 100, Desired: 50,
				Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rules(4, 60, 0, 0, 0)},
				ScaleUps: []ScaleEvent{{ago(tc.age), 4}},
			})
			if got.Replicas != tc.want {
				t.Errorf("Replicas = %d, want %d (%s)", got.Replicas, tc.want, got.Message)
			}
		})
	}
}

// TestPercentRounding: Percent rounds up on the way up and truncates the
// floor on the way down, in float64 exactly as Kubernetes.
func TestPercentRounding(t *testing.T) {
	tests := []struct {
		name             string
		current, percent int32
		up               bool
		want             int32
	}{
		{"up 3 at 10%: ceil(3.3)", 3, 10, true, 4},
		{"up 1 at 1%: still +1", 1, 1, true, 2},
		{"up 100 at 10%: float64 gives 111", 100, 10, true, 111},
		{"up 10 at 100%: 20", 10, 100, true, 20},
		{"down 5 at 50%: trunc(2.5) = 2", 5, 50, false, 2},
		{"down 3 at 10%: trunc(2.7) = 2", 3, 10, false, 2},
		{"down 90 at 30%: float64 gives 62", 90, 30, false, 62},
		{"down 10 at 100%: 0, min binds", 10, 100, false, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := BehaviorInput{Now: t0, Current: tc.current, Min: 1, Max: 1000, Desired: 1000,
				Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rules(0, 0, tc.percent, 15, 0)}}
			if !tc.up {
				in.Desired = 0
				in.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: rules(0, 0, tc.percent, 15, 0)}
			}
			if got := NormalizeBehavior(in); got.Replicas != tc.want {
				t.Errorf("Replicas = %d, want %d (%s)", got.Replicas, tc.want, got.Message)
			}
		})
	}
}
