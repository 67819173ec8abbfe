package hpa

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// tick is one decision of a History-driven loop at t0+at.
func tick(h *History, at time.Duration, b *autoscalingv2.HorizontalPodAutoscalerBehavior, current, desired int32) BehaviorResult {
	return h.Normalize(BehaviorInput{Now: t0.Add(at), Current: current, Min: 1, Max: 100, Desired: desired, Behavior: b})
}

// TestHistorySeedHoldsScaleDown: a new History is seeded with the current
// count, so it cannot scale down for one scale-down window
// (TestScaleDownStabilizeInitialSize): strictly on the behavior path,
// inclusively on the legacy one.
func TestHistorySeedHoldsScaleDown(t *testing.T) {
	tests := []struct {
		name      string
		behavior  *autoscalingv2.HorizontalPodAutoscalerBehavior
		firstDown time.Duration // first tick that may scale down
	}{
		{"behavior {}: 300s window, strict", &autoscalingv2.HorizontalPodAutoscalerBehavior{}, 300 * time.Second},
		{"legacy: 300s window, inclusive", nil, 315 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h History
			for at := time.Duration(0); at <= 330*time.Second; at += 15 * time.Second {
				got := tick(&h, at, tc.behavior, 5, 1)
				want := int32(5)
				if at >= tc.firstDown {
					want = 1
				}
				if got.Replicas != want {
					t.Fatalf("at %s: Replicas = %d, want %d (%s)", at, got.Replicas, want, got.Message)
				}
			}
		})
	}
}

// TestHistoryRecordScale: applied rescales feed the policies' periods.
func TestHistoryRecordScale(t *testing.T) {
	b := &autoscalingv2.HorizontalPodAutoscalerBehavior{}
	var h History
	if got := tick(&h, 0, b, 10, 50); got.Replicas != 20 {
		t.Fatalf("first scale-up = %d, want max(10+4, 2*10) = 20", got.Replicas)
	}
	h.RecordScale(t0, 10, 20)
	// 10s later the event is inside the 15s periods: period start is 10.
	if got := tick(&h, 10*time.Second, b, 20, 50); got.Replicas != 20 || got.Limit != ReasonScaleUpLimit {
		t.Errorf("10s later = %d %s, want 20 ScaleUpLimit (%s)", got.Replicas, got.Limit, got.Message)
	}
	// 15s later it is exactly a period old, so outside: from 20 to 40.
	if got := tick(&h, 15*time.Second, b, 20, 50); got.Replicas != 40 {
		t.Errorf("15s later = %d, want 40 (%s)", got.Replicas, got.Message)
	}
}

func TestHistoryRecordScaleLegacyKeepsNoEvents(t *testing.T) {
	var h History
	tick(&h, 0, nil, 10, 50)
	h.RecordScale(t0, 10, 20)
	h.RecordScale(t0, 20, 20)
	if _, ups, downs := h.Snapshot(); len(ups)+len(downs) != 0 {
		t.Errorf("legacy path stored events: ups %v downs %v", ups, downs)
	}
	b := &autoscalingv2.HorizontalPodAutoscalerBehavior{}
	tick(&h, time.Second, b, 20, 10)
	h.RecordScale(t0.Add(time.Second), 20, 10)
	_, ups, downs := h.Snapshot()
	if diff := cmp.Diff([]ScaleEvent{{t0.Add(time.Second), 10}}, downs); diff != "" || len(ups) != 0 {
		t.Errorf("events mismatch (-want +got):\n%s\nups: %v", diff, ups)
	}
}

// TestHistoryRecordsOnlyNormalizedDecisions: out of bounds, Kubernetes does
// not normalize and stores no recommendation (only the first-sight seed).
func TestHistoryRecordsOnlyNormalizedDecisions(t *testing.T) {
	var h History
	tick(&h, 0, nil, 120, 5)
	tick(&h, 15*time.Second, nil, 100, 7)
	recs, _, _ := h.Snapshot()
	want := []Recommendation{{t0, 120}, {t0.Add(15 * time.Second), 7}}
	if diff := cmp.Diff(want, recs); diff != "" {
		t.Errorf("recommendations mismatch (-want +got):\n%s", diff)
	}
}

func TestHistorySeedOnce(t *testing.T) {
	var h History
	h.Seed(t0, 3)
	h.Seed(t0.Add(time.Second), 9)
	tick(&h, 2*time.Second, nil, 4, 4)
	recs, _, _ := h.Snapshot()
	want := []Recommendation{{t0, 3}, {t0.Add(2 * time.Second), 4}}
	if diff := cmp.Diff(want, recs); diff != "" {
		t.Errorf("recommendations mismatch (-want +got):\n%s", diff)
	}
	recs[0].Replicas = 99
	if again, _, _ := h.Snapshot(); again[0].Replicas != 3 {
		t.Errorf("Snapshot shares memory with the History")
	}
}

// TestHistoryIsBounded: a long run keeps only what the windows and periods
// in force can use.
func TestHistoryIsBounded(t *testing.T) {
	b := &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp:   rules(4, 60, 0, 0, 120),
		ScaleDown: rules(0, 0, 50, 30, 300),
	}
	var h History
	current := int32(10)
	for i := range 10000 {
		at := time.Duration(i) * 15 * time.Second
		desired := int32(5 + i%40) // oscillates, so it rescales often
		got := tick(&h, at, b, current, desired)
		h.RecordScale(t0.Add(at), current, got.Replicas)
		current = got.Replicas
	}
	recs, ups, downs := h.Snapshot()
	if len(recs) > 300/15+2 {
		t.Errorf("%d recommendations kept, want at most %d", len(recs), 300/15+2)
	}
	if len(ups)+len(downs) > 60/15+1 {
		t.Errorf("%d events kept, want at most %d", len(ups)+len(downs), 60/15+1)
	}
}

// TestHistoryMatchesNormalize: a History gives what NormalizeBehavior gives
// with the same history spelled out.
func TestHistoryMatchesNormalize(t *testing.T) {
	b := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: rules(1, 60, 0, 0, 60)}
	var h History
	var recs []Recommendation
	var downs []ScaleEvent
	current := int32(20)
	for i := range 40 {
		now := t0.Add(time.Duration(i) * 10 * time.Second)
		desired := int32(20 - i/2)
		in := BehaviorInput{Now: now, Current: current, Min: 1, Max: 100, Desired: desired, Behavior: b}
		if i == 0 {
			recs = append(recs, Recommendation{now, current})
		}
		spelled := in
		spelled.Recommendations, spelled.ScaleDowns = recs, downs
		want := NormalizeBehavior(spelled)
		got := h.Normalize(in)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("tick %d mismatch (-want +got):\n%s", i, diff)
		}
		recs = append(recs, Recommendation{now, desired})
		if got.Replicas < current {
			downs = append(downs, ScaleEvent{now, current - got.Replicas})
			h.RecordScale(now, current, got.Replicas)
		}
		current = got.Replicas
	}
}
