package hpa

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// FuzzParseBehavior: the parser never panics; what it accepts validates,
// survives a JSON round trip unchanged, and normalizes into [Min, Max].
func FuzzParseBehavior(f *testing.F) {
	for _, s := range []string{
		"{}", "null", "", "[]", "scaleUp: {}", `{"scaleUp": {"policies": []}}`,
		`{"scaleDown": {"stabilizationWindowSeconds": 60, "policies": [{"type": "Pods", "value": 2, "periodSeconds": 30}], "tolerance": "0.05"}}`,
		"scaleUp:\n  selectPolicy: Disabled\n  policies:\n  - {type: Percent, value: 10, periodSeconds: 1800}\n",
		`{"scaleUP": {"selectpolicy": "Max"}}`, `{"scaleUp": {"tolerance": "1e1000"}}`, `{"scaleUp": {"stabilizationWindowSeconds": 1e3}}`,
		"scaleUp: &a {}\nscaleDown: *a\n", `{"scaleDown": {"selectPolicy": "Min", "policies": [{"type": "Pods", "value": 2147483647, "periodSeconds": 1}]}}`,
	} {
		f.Add(s, uint8(1), uint8(9), uint8(5), uint16(40))
	}
	f.Fuzz(func(t *testing.T, s string, minR, span, current uint8, desired uint16) {
		b, err := ParseBehavior(s)
		if err != nil {
			return
		}
		if err := ValidateBehavior(b); err != nil {
			t.Fatalf("ParseBehavior(%q) accepted a behavior that does not validate: %v", s, err)
		}
		if b != nil {
			js, err := json.Marshal(b)
			if err != nil {
				t.Fatalf("json.Marshal(%+v): %v", b, err)
			}
			again, err := ParseBehavior(string(js))
			if err != nil {
				t.Fatalf("round trip of %q through %s: %v", s, js, err)
			}
			if diff := cmp.Diff(b, again); diff != "" {
				t.Fatalf("round trip of %q changed it (-first +second):\n%s", s, diff)
			}
		}
		in := BehaviorInput{Now: t0, Current: int32(current), Min: int32(minR), Max: max(1, int32(minR)+int32(span)),
			Desired: int32(desired), Behavior: b, Recommendations: []Recommendation{{ago(time.Minute), int32(desired) / 2}},
			ScaleUps: []ScaleEvent{{ago(10 * time.Second), 3}}, ScaleDowns: []ScaleEvent{{ago(20 * time.Second), 2}}}
		checkNormalize(t, in)
	})
}

// FuzzNormalizeBehavior: for any valid behavior and history, the result lies
// in [Min, Max] (except when scaling is disabled at 0), moves no further than
// the policies allow, and on the behavior path lies between Current and
// Desired.
func FuzzNormalizeBehavior(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 40, 5, 0, 200, 2})
	f.Add([]byte{0, 10, 3, 1, 0, 1, 2, 1, 3, 0, 200, 0, 4, 0, 60, 1, 0, 150, 0, 120, 3, 0, 30, 0, 50, 5})
	f.Add([]byte{5, 90, 30, 0, 0, 2, 1, 2, 0, 10, 1, 0, 100, 0, 200, 0, 1, 4, 0, 20, 2, 0, 40, 1, 9, 0, 9, 0, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		checkNormalize(t, genInput(&byteReader{data}))
	})
}

// checkNormalize runs NormalizeBehavior on in and checks every invariant.
func checkNormalize(t *testing.T, in BehaviorInput) {
	t.Helper()
	before := cloneInput(in)
	got := NormalizeBehavior(in)
	if !reflect.DeepEqual(before, in) {
		t.Fatalf("NormalizeBehavior mutated its input (-before +after):\n%s", cmp.Diff(before, in))
	}
	if got.Message == "" {
		t.Errorf("no message: %+v", got)
	}
	if in.Current == 0 && in.Min != 0 {
		if got.Replicas != 0 || got.Limit != ReasonScalingDisabled {
			t.Fatalf("disabled at zero: got %+v", got)
		}
		return
	}
	if got.Replicas < in.Min || got.Replicas > in.Max {
		t.Fatalf("Replicas %d outside [%d, %d] for %+v: %s", got.Replicas, in.Min, in.Max, in, got.Message)
	}
	if !slices.Contains([]string{ReasonDesiredWithinRange, ReasonScaleUpLimit, ReasonScaleDownLimit, ReasonTooManyReplicas, ReasonTooFewReplicas}, got.Limit) {
		t.Fatalf("unknown Limit %q", got.Limit)
	}
	if in.Current < in.Min || in.Current > in.Max {
		return // jumped to the bound, checked above
	}
	if !slices.Contains([]string{ReasonReadyForNewScale, ReasonScaleUpStabilized, ReasonScaleDownStabilized}, got.Stabilized) {
		t.Fatalf("unknown Stabilized %q", got.Stabilized)
	}
	if in.Behavior == nil {
		if got.Replicas > in.Current && int64(got.Replicas) > max(2*int64(in.Current), 4) {
			t.Fatalf("legacy: %d -> %d is above the cap max(2*current, 4)", in.Current, got.Replicas)
		}
		return
	}
	checkBehaviorPath(t, in, got)
}

// checkBehaviorPath checks the behavior path against a reference of the
// policies written from the digest, by event age rather than cutoffs.
func checkBehaviorPath(t *testing.T, in BehaviorInput, got BehaviorResult) {
	t.Helper()
	lo, hi := min(in.Current, in.Desired), max(in.Current, in.Desired)
	if got.Replicas < lo || got.Replicas > hi {
		t.Fatalf("Replicas %d not between current %d and desired %d: %s", got.Replicas, in.Current, in.Desired, got.Message)
	}
	b := DefaultBehavior(in.Behavior)
	switch {
	case got.Replicas > in.Current:
		if limit := refLimit(in, b.ScaleUp, true); int64(got.Replicas) > max(limit, int64(in.Current)) {
			t.Fatalf("scale-up %d -> %d beyond the policies' %d: %s", in.Current, got.Replicas, limit, got.Message)
		}
	case got.Replicas < in.Current:
		if floor := refLimit(in, b.ScaleDown, false); int64(got.Replicas) < min(floor, int64(in.Current)) {
			t.Fatalf("scale-down %d -> %d beyond the policies' %d: %s", in.Current, got.Replicas, floor, got.Message)
		}
	}
}

// refLimit is the policies' bound in one direction: the most (up) or least
// (down) replicas the selected policy allows.
func refLimit(in BehaviorInput, r *autoscalingv2.HPAScalingRules, up bool) int64 {
	if *r.SelectPolicy == autoscalingv2.DisabledPolicySelect {
		return int64(in.Current)
	}
	var proposals []int64
	for _, p := range r.Policies {
		period := time.Duration(p.PeriodSeconds) * time.Second
		start := int64(in.Current) - sumYounger(in.Now, in.ScaleUps, period) + sumYounger(in.Now, in.ScaleDowns, period)
		v := int64(p.Value)
		switch {
		case up && p.Type == autoscalingv2.PodsScalingPolicy:
			proposals = append(proposals, start+v)
		case up:
			proposals = append(proposals, int64(math.Ceil(float64(start)*(1+float64(v)/100))))
		case p.Type == autoscalingv2.PodsScalingPolicy:
			proposals = append(proposals, start-v)
		default:
			proposals = append(proposals, int64(float64(start)*(1-float64(v)/100)))
		}
	}
	if (*r.SelectPolicy == autoscalingv2.MaxChangePolicySelect) == up {
		return slices.Max(proposals)
	}
	return slices.Min(proposals)
}

func sumYounger(now time.Time, events []ScaleEvent, period time.Duration) int64 {
	var sum int64
	for _, e := range events {
		if now.Sub(e.At) < period {
			sum += int64(e.Change)
		}
	}
	return sum
}

func cloneInput(in BehaviorInput) BehaviorInput {
	in.Behavior = in.Behavior.DeepCopy()
	in.Recommendations = slices.Clone(in.Recommendations)
	in.ScaleUps, in.ScaleDowns = slices.Clone(in.ScaleUps), slices.Clone(in.ScaleDowns)
	return in
}
