package behavior

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestNormalizeDoesNotAllocate: the KPA tick calls it on every decision.
func TestNormalizeDoesNotAllocate(t *testing.T) {
	b := Default(&Behavior{})
	recs := []Recommendation{{t0.Add(-time.Minute), 9}}
	in := Input{Now: t0, Current: 5, Min: 1, Max: 10, Desired: 2, Behavior: b, Recommendations: recs}
	if n := testing.AllocsPerRun(100, func() { _ = Normalize(in) }); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}

func TestDefault(t *testing.T) {
	if Default(nil) != nil {
		t.Errorf("Default(nil) is not nil: nil selects the legacy path")
	}
	want := &Behavior{ScaleUp: DefaultScaleUpRules(), ScaleDown: DefaultScaleDownRules()}
	if diff := cmp.Diff(want, Default(&Behavior{})); diff != "" {
		t.Errorf("Default({}) (-want +got):\n%s", diff)
	}
	in := &Behavior{ScaleDown: &Rules{Policies: []Policy{}, Tolerance: ptr(0.2)}}
	got := Default(in)
	if got.ScaleDown.Policies == nil || len(got.ScaleDown.Policies) != 0 || *got.ScaleDown.Tolerance != 0.2 || *got.ScaleDown.SelectPolicy != Max {
		t.Errorf("Default kept the explicit empty policies and the tolerance, filled selectPolicy? %+v", got.ScaleDown)
	}
	*got.ScaleDown.Tolerance = 1
	if *in.ScaleDown.Tolerance != 0.2 {
		t.Errorf("Default shares memory with its input")
	}
}

// TestResultMessage: each outcome explains itself with its numbers.
func TestResultMessage(t *testing.T) {
	b := &Behavior{}
	tests := []struct {
		in   Input
		want []string
	}{
		{Input{Now: t0, Current: 10, Min: 1, Max: 1000, Desired: 50, Behavior: b}, []string{"50 capped at 20 by the scaleUp policies (selectPolicy Max)"}},
		{Input{Now: t0, Current: 10, Min: 1, Max: 100, Desired: 3, Behavior: b, Recommendations: []Recommendation{{t0.Add(-time.Minute), 8}}},
			[]string{"3 held at 8 by the 5m0s scale-down stabilization window"}},
		{Input{Now: t0, Current: 3, Min: 1, Max: 100, Desired: 50}, []string{"capped at max(2*3, 4) = 6"}},
		{Input{Now: t0, Current: 0, Min: 1, Max: 100, Desired: 50}, []string{"scaling is disabled"}},
		{Input{Now: t0, Current: 4, Min: 1, Max: 100, Desired: 1, Behavior: &Behavior{ScaleDown: &Rules{StabilizationWindowSeconds: ptr(int32(0)),
			Policies: []Policy{{Type: Pods, Value: 1, PeriodSeconds: 60}}}}}, []string{"1 raised to 3 by the scaleDown policies (selectPolicy Max)"}},
	}
	for _, tc := range tests {
		got := Normalize(tc.in).Message()
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("Message() = %q, want it to contain %q", got, w)
			}
		}
	}
}
