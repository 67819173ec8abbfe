package hpa

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// wide is a behavior whose policies never bind below 1000 replicas, so that
// a test sees stabilization alone.
func wide(upWindow, downWindow int32) *autoscalingv2.HorizontalPodAutoscalerBehavior {
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp:   selecting(autoscalingv2.MaxChangePolicySelect, upWindow, podsPolicy(1000, 15)),
		ScaleDown: selecting(autoscalingv2.MaxChangePolicySelect, downWindow, percentPolicy(100, 15)),
	}
}

// TestStabilization mirrors horizontal_test.go's
// TestNormalizeDesiredReplicasWithBehavior, plus the window boundaries.
func TestStabilization(t *testing.T) {
	tests := []struct {
		name                 string
		recs                 []Recommendation
		current, desired     int32
		upWindow, downWindow int32
		want                 int32
		stabilized           string
	}{
		{name: "empty recommendations for scaling down", current: 100, desired: 5, want: 5, stabilized: ReasonReadyForNewScale},
		{name: "simple scale down stabilization", recs: []Recommendation{{ago(2 * time.Minute), 4}, {ago(time.Minute), 5}},
			current: 100, desired: 3, downWindow: 180, want: 5, stabilized: ReasonScaleDownStabilized},
		{name: "simple scale up stabilization", recs: []Recommendation{{ago(2 * time.Minute), 4}, {ago(time.Minute), 5}},
			current: 1, desired: 7, upWindow: 300, want: 4, stabilized: ReasonScaleUpStabilized},
		{name: "no scale down stabilization", recs: []Recommendation{{ago(2 * time.Minute), 1}, {ago(time.Minute), 2}},
			current: 100, desired: 3, upWindow: 300, want: 3, stabilized: ReasonReadyForNewScale},
		{name: "no scale up stabilization", recs: []Recommendation{{ago(2 * time.Minute), 4}, {ago(time.Minute), 5}},
			current: 1, desired: 3, downWindow: 300, want: 3, stabilized: ReasonReadyForNewScale},
		{name: "old recommendations, scale down", recs: []Recommendation{{ago(10 * time.Minute), 10}, {ago(9 * time.Minute), 9}},
			current: 100, desired: 3, want: 3, stabilized: ReasonReadyForNewScale},
		{name: "old recommendations, scale up", recs: []Recommendation{{ago(10 * time.Minute), 10}, {ago(9 * time.Minute), 9}},
			current: 1, desired: 100, want: 100, stabilized: ReasonReadyForNewScale},
		{name: "scale down stabilization among obsolete ones",
			recs:    []Recommendation{{ago(10 * time.Minute), 10}, {ago(time.Minute), 4}, {ago(2 * time.Minute), 5}, {ago(9 * time.Minute), 9}},
			current: 100, desired: 3, downWindow: 180, want: 5, stabilized: ReasonScaleDownStabilized},
		{name: "scale up stabilization among obsolete ones",
			recs:    []Recommendation{{ago(100 * time.Minute), 10}, {ago(time.Minute), 6}, {ago(2 * time.Minute), 5}, {ago(3 * time.Minute), 9}},
			current: 1, desired: 100, upWindow: 300, want: 5, stabilized: ReasonScaleUpStabilized},
		// A recommendation exactly as old as the window is outside it.
		{name: "down window: exactly the window old is outside", recs: []Recommendation{{ago(300 * time.Second), 7}},
			current: 10, desired: 3, downWindow: 300, want: 3, stabilized: ReasonReadyForNewScale},
		{name: "down window: 1ns younger is inside", recs: []Recommendation{{ago(300*time.Second - 1), 7}},
			current: 10, desired: 3, downWindow: 300, want: 7, stabilized: ReasonScaleDownStabilized},
		{name: "up window: exactly the window old is outside", recs: []Recommendation{{ago(60 * time.Second), 2}},
			current: 1, desired: 10, upWindow: 60, want: 10, stabilized: ReasonReadyForNewScale},
		{name: "up window: 1ns younger is inside", recs: []Recommendation{{ago(60*time.Second - 1), 2}},
			current: 1, desired: 10, upWindow: 60, want: 2, stabilized: ReasonScaleUpStabilized},
		{name: "window 0 ignores a recommendation made now", recs: []Recommendation{{t0, 2}},
			current: 1, desired: 10, want: 10, stabilized: ReasonReadyForNewScale},
		// When the window disagrees with the direction the count stays put.
		{name: "do not scale up when the up window went lower", recs: []Recommendation{{ago(30 * time.Second), 1}},
			current: 2, desired: 5, upWindow: 60, downWindow: 300, want: 2, stabilized: ReasonScaleUpStabilized},
		{name: "do not scale down when the down window went higher", recs: []Recommendation{{ago(30 * time.Second), 3}},
			current: 2, desired: 1, downWindow: 300, want: 2, stabilized: ReasonScaleDownStabilized},
		// Recommendations are unclamped: a spike far above the count holds it.
		{name: "a spike holds the count for the window", recs: []Recommendation{{ago(time.Minute), 1000}},
			current: 10, desired: 3, downWindow: 300, want: 10, stabilized: ReasonScaleDownStabilized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := NormalizeBehavior(BehaviorInput{
				Now: t0, Current: tc.current, Min: 1, Max: 2000, Desired: tc.desired,
				Behavior: wide(tc.upWindow, tc.downWindow), Recommendations: tc.recs,
			})
			want := outcome{tc.want, ReasonDesiredWithinRange, tc.stabilized}
			if diff := cmp.Diff(want, outcomeOf(got)); diff != "" {
				t.Errorf("NormalizeBehavior() mismatch (-want +got):\n%s\nmessage: %s", diff, got.Message)
			}
		})
	}
}

// TestLegacy mirrors TestNormalizeDesiredReplicas (5-minute window) and
// TestConvertDesiredReplicasWithRules with the production scale-up factor 2
// (Kubernetes' test file sets it to 8).
func TestLegacy(t *testing.T) {
	tests := []struct {
		name                       string
		recs                       []Recommendation
		current, desired, min, max int32
		want                       outcome
	}{
		{"empty log", nil, 10, 5, 1, 100, outcome{5, ReasonDesiredWithinRange, ReasonReadyForNewScale}},
		{"stabilize", []Recommendation{{ago(2 * time.Minute), 4}, {ago(time.Minute), 5}}, 10, 3, 1, 100,
			outcome{5, ReasonDesiredWithinRange, ReasonScaleDownStabilized}},
		{"no stabilize", []Recommendation{{ago(2 * time.Minute), 1}, {ago(time.Minute), 2}}, 10, 3, 1, 100,
			outcome{3, ReasonDesiredWithinRange, ReasonReadyForNewScale}},
		{"no stabilize - old recommendations", []Recommendation{{ago(10 * time.Minute), 10}, {ago(9 * time.Minute), 9}}, 10, 3, 1, 100,
			outcome{3, ReasonDesiredWithinRange, ReasonReadyForNewScale}},
		{"stabilize - old recommendations", []Recommendation{{ago(10 * time.Minute), 10}, {ago(time.Minute), 4}, {ago(2 * time.Minute), 5},
			{ago(9 * time.Minute), 9}}, 10, 3, 1, 100,
			outcome{5, ReasonDesiredWithinRange, ReasonScaleDownStabilized}},
		{"window is inclusive: exactly 5 minutes old counts", []Recommendation{{ago(5 * time.Minute), 7}}, 10, 3, 1, 100,
			outcome{7, ReasonDesiredWithinRange, ReasonScaleDownStabilized}},
		{"1ns older than 5 minutes does not", []Recommendation{{ago(5*time.Minute + 1), 7}}, 10, 3, 1, 100,
			outcome{3, ReasonDesiredWithinRange, ReasonReadyForNewScale}},
		{"the max of the window also lifts a scale-up", []Recommendation{{ago(time.Minute), 8}}, 2, 3, 1, 100,
			outcome{4, ReasonScaleUpLimit, ReasonScaleDownStabilized}},
		{"within range", nil, 5, 7, 3, 8, outcome{7, ReasonDesiredWithinRange, ReasonReadyForNewScale}},
		{"below min", nil, 3, 1, 2, 8, outcome{2, ReasonTooFewReplicas, ReasonReadyForNewScale}},
		{"zero within range when min is 0", nil, 1, 0, 0, 10, outcome{0, ReasonDesiredWithinRange, ReasonReadyForNewScale}},
		{"max binds below the cap", nil, 10, 1000, 1, 10, outcome{10, ReasonTooManyReplicas, ReasonReadyForNewScale}},
		{"cap binds below max: 2*3", nil, 3, 1000, 1, 2000, outcome{6, ReasonScaleUpLimit, ReasonReadyForNewScale}},
		{"cap 4 from 1 replica", nil, 1, 10, 1, 100, outcome{4, ReasonScaleUpLimit, ReasonReadyForNewScale}},
		{"cap equal to max is TooManyReplicas", nil, 5, 20, 1, 10, outcome{10, ReasonTooManyReplicas, ReasonReadyForNewScale}},
		{"from zero with min 0", nil, 0, 3, 0, 10, outcome{3, ReasonDesiredWithinRange, ReasonReadyForNewScale}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := NormalizeBehavior(BehaviorInput{Now: t0, Current: tc.current, Min: tc.min, Max: tc.max, Desired: tc.desired, Recommendations: tc.recs})
			if diff := cmp.Diff(tc.want, outcomeOf(got)); diff != "" {
				t.Errorf("NormalizeBehavior() mismatch (-want +got):\n%s\nmessage: %s", diff, got.Message)
			}
		})
	}
}

// TestOutOfBounds: outside [min, max] the count jumps to the bound with no
// stabilization or policy; 0 with min > 0 is left alone.
func TestOutOfBounds(t *testing.T) {
	recs := []Recommendation{{ago(time.Minute), 50}}
	tests := []struct {
		name                       string
		behavior                   *autoscalingv2.HorizontalPodAutoscalerBehavior
		current, desired, min, max int32
		want                       outcome
	}{
		{"disabled at zero", nil, 0, 5, 1, 10, outcome{0, ReasonScalingDisabled, ""}},
		{"disabled at zero, behavior", &autoscalingv2.HorizontalPodAutoscalerBehavior{}, 0, 5, 1, 10, outcome{0, ReasonScalingDisabled, ""}},
		{"above max", nil, 12, 1, 1, 10, outcome{10, ReasonTooManyReplicas, ""}},
		{"above max, behavior", wide(0, 300), 100, 1, 1, 10, outcome{10, ReasonTooManyReplicas, ""}},
		{"below min", nil, 1, 1, 3, 10, outcome{3, ReasonTooFewReplicas, ""}},
		{"below min, behavior: no policy applies", selectingBoth(autoscalingv2.DisabledPolicySelect), 1, 1, 30, 100, outcome{30, ReasonTooFewReplicas, ""}},
		{"zero with min 0 is normalized", &autoscalingv2.HorizontalPodAutoscalerBehavior{}, 0, 2, 0, 10,
			outcome{2, ReasonDesiredWithinRange, ReasonReadyForNewScale}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := NormalizeBehavior(BehaviorInput{Now: t0, Current: tc.current, Min: tc.min, Max: tc.max, Desired: tc.desired,
				Behavior: tc.behavior, Recommendations: recs})
			if diff := cmp.Diff(tc.want, outcomeOf(got)); diff != "" {
				t.Errorf("NormalizeBehavior() mismatch (-want +got):\n%s\nmessage: %s", diff, got.Message)
			}
		})
	}
}

func selectingBoth(sel autoscalingv2.ScalingPolicySelect) *autoscalingv2.HorizontalPodAutoscalerBehavior {
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp:   selecting(sel, 0, podsPolicy(1, 15)),
		ScaleDown: selecting(sel, 0, podsPolicy(1, 15)),
	}
}

// TestNilIsNotEmpty: behavior null takes the legacy path, behavior {} the
// defaulted behavior path.
func TestNilIsNotEmpty(t *testing.T) {
	tests := []struct {
		name     string
		behavior *autoscalingv2.HorizontalPodAutoscalerBehavior
		recs     []Recommendation
		current  int32
		desired  int32
		want     outcome
	}{
		{"nil from 1: cap max(2, 4)", nil, nil, 1, 10, outcome{4, ReasonScaleUpLimit, ReasonReadyForNewScale}},
		{"{} from 1: 1+4", &autoscalingv2.HorizontalPodAutoscalerBehavior{}, nil, 1, 10, outcome{5, ReasonScaleUpLimit, ReasonReadyForNewScale}},
		{"nil: a 300s-old recommendation counts", nil, []Recommendation{{ago(300 * time.Second), 8}}, 10, 3,
			outcome{8, ReasonDesiredWithinRange, ReasonScaleDownStabilized}},
		{"{}: a 300s-old recommendation is out", &autoscalingv2.HorizontalPodAutoscalerBehavior{}, []Recommendation{{ago(300 * time.Second), 8}}, 10, 3,
			outcome{3, ReasonDesiredWithinRange, ReasonReadyForNewScale}},
		{"{}: default down window is 300s", &autoscalingv2.HorizontalPodAutoscalerBehavior{}, []Recommendation{{ago(299 * time.Second), 8}}, 10, 3,
			outcome{8, ReasonDesiredWithinRange, ReasonScaleDownStabilized}},
		{"{}: no default up window", &autoscalingv2.HorizontalPodAutoscalerBehavior{}, []Recommendation{{ago(time.Second), 2}}, 10, 12,
			outcome{12, ReasonDesiredWithinRange, ReasonReadyForNewScale}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := NormalizeBehavior(BehaviorInput{Now: t0, Current: tc.current, Min: 1, Max: 100, Desired: tc.desired,
				Behavior: tc.behavior, Recommendations: tc.recs})
			if diff := cmp.Diff(tc.want, outcomeOf(got)); diff != "" {
				t.Errorf("NormalizeBehavior() mismatch (-want +got):\n%s\nmessage: %s", diff, got.Message)
			}
		})
	}
}

// TestMessages: every result explains itself with the numbers involved.
func TestMessages(t *testing.T) {
	tests := []struct {
		name string
		in   BehaviorInput
		want []string
	}{
		{"scale-up limit", BehaviorInput{Now: t0, Current: 10, Min: 1, Max: 1000, Desired: 50, Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{}},
			[]string{"increasing faster than the maximum scale rate", "50 capped at 20", "selectPolicy Max"}},
		{"stabilized down", BehaviorInput{Now: t0, Current: 10, Min: 1, Max: 100, Desired: 3, Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{},
			Recommendations: []Recommendation{{ago(time.Minute), 8}}},
			[]string{"3 held at 8", "5m0s scale-down stabilization window"}},
		{"legacy cap", BehaviorInput{Now: t0, Current: 3, Min: 1, Max: 100, Desired: 50}, []string{"max(2*3, 4) = 6"}},
		{"above max", BehaviorInput{Now: t0, Current: 12, Min: 1, Max: 10, Desired: 50}, []string{"12 above max 10"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := NormalizeBehavior(tc.in).Message
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("Message = %q, want it to contain %q", got, w)
				}
			}
		})
	}
}
