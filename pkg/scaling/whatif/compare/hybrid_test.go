package compare

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/scaling/decider"
)

func TestNew(t *testing.T) {
	for _, p := range decider.Predictors() {
		if got := New(p) != nil; got != p.Comparison() {
			t.Errorf("New(%s) != nil is %v, want %v (Predictor.Comparison)", p, got, p.Comparison())
		}
	}
}

// TestHybridHistogramKeep: the hybrid histogram's windows from the
// percentiles of the idle times, through the range when the histogram is
// flat, around the last idle time when most are out of range.
func TestHybridHistogramKeep(t *testing.T) {
	tests := []struct {
		name string
		gaps map[int64]int // gap -> count
		want []decider.KeepRange
	}{
		{name: "no gaps: nothing", want: nil},
		// 100 gaps of 5 to 6 minutes: the 5th percentile 303 s, the 99th
		// 359.4 s (within the minute [300, 360)), less and plus 10%.
		{name: "a 5-minute timer at random seconds", gaps: map[int64]int{310: 50, 350: 50}, want: []decider.KeepRange{{Lo: 272, Hi: 396}}},
		// Gaps over every minute of the range: the bins are alike (CV 0).
		{name: "flat: kept through the range", gaps: func() map[int64]int {
			m := map[int64]int{}
			for g := int64(30); g < hybridRange; g += 60 {
				m[g] = 1
			}
			return m
		}(), want: []decider.KeepRange{{Lo: 0, Hi: hybridRange}}},
		{name: "mostly out of range: around the last", gaps: map[int64]int{5 * 3600: 3, 60: 1}, want: []decider.KeepRange{{Lo: 15300, Hi: 20700}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &hybridHistogram{}
			for g, n := range tt.gaps {
				for range n {
					h.Add(g)
				}
			}
			if diff := cmp.Diff(tt.want, h.Keep(120)); diff != "" {
				t.Errorf("Keep (-want +got):\n%s", diff)
			}
		})
	}
}

// TestExactKeep: each of the latest lengths is a point a second either
// side (the gaps repeat half of the time here, so even a length seen once
// pays for its 3 seconds at a cost of 2 minutes); the bins between them,
// from the hazard of the gaps that repeated none, do not.
func TestExactKeep(t *testing.T) {
	e := &exact{}
	if got := e.Keep(120); got != nil {
		t.Errorf("no gaps: %v, want nothing", got)
	}
	for _, g := range []int64{700, 1900, 700, 3100, 700, 5400, 701, 700} {
		e.Add(g)
	}
	want := []decider.KeepRange{{Lo: 699, Hi: 703}, {Lo: 1899, Hi: 1902}, {Lo: 3099, Hi: 3102}, {Lo: 5399, Hi: 5402}}
	if diff := cmp.Diff(want, e.Keep(120)); diff != "" {
		t.Errorf("Keep (-want +got):\n%s", diff)
	}
	if e.freshTotal != 4 {
		t.Errorf("%d gaps repeated none, want 4 (the first 700, 1900, 3100, 5400)", e.freshTotal)
	}
}
