package hpa

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

func TestDefaultBehavior(t *testing.T) {
	defaultUp := defaultScaleUpRules()
	defaultDown := defaultScaleDownRules()
	tests := []struct {
		name string
		in   *autoscalingv2.HorizontalPodAutoscalerBehavior
		want *autoscalingv2.HorizontalPodAutoscalerBehavior
	}{
		{"nil stays nil", nil, nil},
		{"empty gets both directions", &autoscalingv2.HorizontalPodAutoscalerBehavior{},
			&autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: defaultUp, ScaleDown: defaultDown}},
		{"fields are filled one at a time",
			&autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp:   &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr(int32(60))},
				ScaleDown: &autoscalingv2.HPAScalingRules{SelectPolicy: ptr(autoscalingv2.MinChangePolicySelect), Tolerance: quantity("0.05")},
			},
			&autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr(int32(60)),
					SelectPolicy: defaultUp.SelectPolicy, Policies: defaultUp.Policies},
				ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr(int32(300)),
					SelectPolicy: ptr(autoscalingv2.MinChangePolicySelect), Policies: defaultDown.Policies, Tolerance: quantity("0.05")},
			}},
		{"an explicit empty policy list stays empty",
			&autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{}}},
			&autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr(int32(0)), SelectPolicy: defaultUp.SelectPolicy,
					Policies: []autoscalingv2.HPAScalingPolicy{}},
				ScaleDown: defaultDown,
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, DefaultBehavior(tc.in)); diff != "" {
				t.Errorf("DefaultBehavior() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDefaultBehaviorCopies: the result shares no memory with the input.
func TestDefaultBehaviorCopies(t *testing.T) {
	in := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rules(4, 15, 0, 0, 30)}
	out := DefaultBehavior(in)
	out.ScaleUp.Policies[0].Value = 99
	*out.ScaleUp.StabilizationWindowSeconds = 99
	if in.ScaleUp.Policies[0].Value != 4 || *in.ScaleUp.StabilizationWindowSeconds != 30 {
		t.Errorf("DefaultBehavior shares memory with its input: %+v", in.ScaleUp)
	}
	// The package defaults are fresh on every call too.
	DefaultBehavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{}).ScaleUp.Policies[0].Value = 99
	if got := DefaultBehavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{}).ScaleUp.Policies[0].Value; got != DefaultScaleUpPods {
		t.Errorf("defaults were mutated: scaleUp Pods = %d", got)
	}
}

func TestToleranceFor(t *testing.T) {
	tests := []struct {
		name string
		in   *autoscalingv2.HorizontalPodAutoscalerBehavior
		want Tolerance
	}{
		{"nil: cluster default", nil, Tolerance{0.1, 0.1}},
		{"unset: cluster default", &autoscalingv2.HorizontalPodAutoscalerBehavior{}, Tolerance{0.1, 0.1}},
		{"each direction on its own",
			&autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{Tolerance: quantity("0.01")}},
			Tolerance{ScaleUp: 0.01, ScaleDown: 0.1}},
		{"both", &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleUp:   &autoscalingv2.HPAScalingRules{Tolerance: quantity("0")},
			ScaleDown: &autoscalingv2.HPAScalingRules{Tolerance: quantity("360m")}},
			Tolerance{ScaleUp: 0, ScaleDown: 0.36}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ToleranceFor(tc.in)); diff != "" {
				t.Errorf("ToleranceFor() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
