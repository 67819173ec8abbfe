package decider

import (
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/config"
)

func learnedRevision() *config.Revision {
	rev := knativeDefaults()
	rev.ScaleToZeroPolicy = config.ScaleToZeroLearned
	rev.ColdStartCost, rev.PrewarmLead = 2*time.Minute, 10*time.Second
	return rev
}

func TestGapEdges(t *testing.T) {
	if gapEdges[0] != 2 || gapEdges[gapBins-1] != maxGap || gapBins > 128 {
		t.Fatalf("edges from %d to %d in %d bins: want 2 to %d in at most 128", gapEdges[0], gapEdges[gapBins-1], gapBins, maxGap)
	}
	for b := 1; b < gapBins; b++ {
		w, lo := gapEdges[b]-gapEdges[b-1], gapEdges[b-1]
		if w < 1 || (lo >= 10 && b < gapBins-1 && float64(w) > 0.1*float64(lo)+1) {
			t.Errorf("bin %d [%d, %d): want at least 1s and at most about 10%% wide", b-1, lo, gapEdges[b])
		}
	}
	tests := []struct {
		gap  int64
		want int
	}{{2, 0}, {3, 1}, {9, 7}, {maxGap - 1, gapBins - 2}, {maxGap, gapBins - 1}, {10 * maxGap, gapBins - 1}}
	for _, tt := range tests {
		if got := gapBin(tt.gap); got != tt.want {
			t.Errorf("gapBin(%d) = %d, want %d", tt.gap, got, tt.want)
		}
	}
}

func TestIdleGapsObserve(t *testing.T) {
	var h idleGaps
	for _, s := range []struct {
		t    int64
		busy bool
	}{{10, true}, {11, true}, {12, false}, {20, true}, {20, true}, {320, true}} {
		h.observe(at(s.t), s.busy)
	}
	want := map[int]uint16{gapBin(9): 1, gapBin(300): 1}
	got := map[int]uint16{}
	for b, c := range h.counts {
		if c > 0 {
			got[b] = c
		}
	}
	if diff := cmp.Diff(want, got); diff != "" || h.total != 2 {
		t.Errorf("bins (-want +got):\n%s\ntotal %d, want 2", diff, h.total)
	}
}

func TestIdleGapsBounded(t *testing.T) {
	var h idleGaps
	for i := range 100_000 {
		h.add(int64(2+i%5000), 0)
	}
	if h.total > maxGaps {
		t.Errorf("total %d: want at most %d", h.total, maxGaps)
	}
	if size := unsafe.Sizeof(learnedPolicy{}); size > 1024 {
		t.Errorf("a revision's learned state takes %d bytes, want at most 1 KiB", size)
	}
}

func TestKeepBits(t *testing.T) {
	tests := []struct {
		name string
		gaps map[int64]int // gap -> count
		cost float64
		want []int64 // gaps whose bins are kept
	}{
		{name: "a timer: only its bin", gaps: map[int64]int{300: 20}, cost: 120, want: []int64{300}},
		{name: "a cheap cold start keeps nothing wide", gaps: map[int64]int{300: 20}, cost: 10, want: nil},
		// Bins 4, 6 and 7 have seen little idle time (51 s, 1 s, 1 s): the
		// dense bin next to them lends them its hazard.
		{name: "short gaps and their thin neighbours are kept, rare long ones are not", gaps: map[int64]int{5: 50, 3000: 1},
			cost: 120, want: []int64{4, 5, 6, 7}},
		{name: "a neighbour with a long history of its own is not", gaps: map[int64]int{5: 1000}, cost: 120, want: []int64{5}},
		// One gap at 3000 s says little about where the next long one ends:
		// when a cold start is dear, the range around it is kept.
		{name: "rare long ones are kept when a cold start is dear", gaps: map[int64]int{5: 50, 3000: 1}, cost: 3600,
			want: []int64{4, 5, 6, 7, 2075, 2283, 2512, 3000}},
		// Gaps spread thinly over 20-40 minutes: the bins between them,
		// which no gap happened to end in, are kept with them (from 1063 s,
		// where the neighbourhood's hazard starts to pay, to the last).
		{name: "thinly spread gaps keep their range", gaps: map[int64]int{1200: 1, 1500: 1, 1800: 1, 2100: 1, 2400: 1},
			cost: 3600, want: []int64{1063, 1170, 1287, 1416, 1558, 1714, 1886, 2075, 2283}},
		{name: "gaps of 4h and more never", gaps: map[int64]int{maxGap + 5: 30}, cost: 86400, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h idleGaps
			for g, n := range tt.gaps {
				for range n {
					h.add(g, 0)
				}
			}
			h.recompute(&predictorTable[PredictorHistogram], tt.cost, 0)
			var got []int64
			for b := range gapBins {
				if h.kept(b) {
					got = append(got, gapEdges[b])
				}
			}
			var want []int64
			for _, g := range tt.want {
				want = append(want, gapEdges[gapBin(g)])
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("kept bins (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLearnedTimer drives a revision invoked for one second every 300 s,
// with replicas ready as soon as asked: with too little history it behaves
// as Knative's policy (and says so); once it has seen enough gaps it
// releases the replica right after each request and pre-warms it ahead of
// the next, every decision with its reason.
func TestLearnedTimer(t *testing.T) {
	st := NewStepper(learnedRevision(), StepperOptions{First: at(0), Ready: 1})
	ready := int32(1)
	type seen struct {
		desired int32
		codes   []Code
		keptFor int64 // a PreWarm's or KeepAlive's second: now + A
	}
	decisions := map[int64]seen{}
	var dec Decision
	for s := int64(0); s < 300*15; s++ {
		conc := 0.0
		if s%300 == 0 {
			conc = 1
		}
		r := ready
		if !st.StepInto(at(s), Second{HasMetric: ready > 0 || conc > 0, Concurrency: conc, RPS: conc, Ready: &r}, &dec) {
			continue
		}
		ready = dec.Desired
		var codes []Code
		keptFor := int64(-1)
		for _, rs := range dec.Reasons() {
			codes = append(codes, rs.Code)
			if rs.Code == PreWarm || rs.Code == KeepAlive {
				keptFor = s + int64(rs.A)
			}
			if m := rs.Message(); m == "" || m == string(rs.Code) {
				t.Errorf("reason %s has no sentence", rs.Code)
			}
		}
		decisions[s] = seen{dec.Desired, codes, keptFor}
	}
	check := func(s int64, desired int32, code Code) {
		t.Helper()
		d, ok := decisions[s]
		if !ok || d.desired != desired || !hasCodeIn(d.codes, code) {
			t.Errorf("second %d: desired %d, reasons %v; want desired %d with %s", s, d.desired, d.codes, desired, code)
		}
	}
	// Second round: Knative's stable window holds the replica.
	check(300+30, 1, LearnedFallback)
	// Round 13: released right after the request, pre-warmed ahead of the next.
	check(300*13+4, 0, LearnedRelease)
	check(300*13+200, 0, LearnedRelease)
	// After the release, every replica is pre-warmed for the timer's second
	// of the minute (second 0: a whole minute of idle time), the last one
	// at most a bin (10%) and two leads ahead of the next request and early
	// enough to be ready for it. (The bins of 4 minutes, which no gap
	// ended in, borrow a little hazard from their neighbour, and at the
	// timer's second that little is worth a pre-warm too.)
	last := int64(-1)
	for s := int64(300*13 + 4); s < 300*14; s += 2 {
		d, ok := decisions[s]
		if !ok || d.desired != 1 {
			continue
		}
		if !hasCodeIn(d.codes, PreWarm) && !hasCodeIn(d.codes, KeepAlive) || d.keptFor%60 != 0 {
			t.Errorf("second %d: a replica for %v, for second %d; want PreWarm or KeepAlive for a whole minute", s, d.codes, d.keptFor)
		}
		if last < 0 || s > last+2 {
			check(s, 1, PreWarm)
		}
		last = s
	}
	if last < 300*14-30-20 || last > 300*14-2 {
		t.Errorf("last replica kept at second %d: want within [%d, %d]", last, 300*14-50, 300*14-2)
	}
	check(300*14-2, 1, KeepAlive)
}

func hasCodeIn(codes []Code, c Code) bool {
	for _, x := range codes {
		if x == c {
			return true
		}
	}
	return false
}

func TestLearnedMessages(t *testing.T) {
	tests := []struct {
		r    Reason
		want string
	}{
		{Reason{Code: PreWarm, A: 240, B: 5, C: 37}, "pre-warm: next request expected in about 4m0s (5 of the 37 idle gaps"},
		{Reason{Code: LearnedRelease, A: 60, B: 10, C: 40}, "released: no request expected before about 1m0s"},
		{Reason{Code: LearnedFallback, A: 3, B: 10}, "3 idle gap(s) seen, it needs 10"},
	}
	for _, tt := range tests {
		if got := tt.r.Message(); !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want it to contain %q", tt.r.Code, got, tt.want)
		}
	}
}

func TestKnativePolicyHasNoLearnedState(t *testing.T) {
	if d := New(knativeDefaults(), at(0), 0); d.learned != nil {
		t.Error("the knative policy allocated learned state")
	}
}
