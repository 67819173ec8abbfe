package learned

import (
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/config"
)

var epoch = time.Unix(1_767_225_600, 0)

func at(s int64) time.Time { return epoch.Add(time.Duration(s) * time.Second) }

// testRevision is a revision of the learned policy: a cold start costs
// 2 minutes, a replica is pre-warmed 10 s ahead, ticks of 2 s.
func testRevision() *config.Revision {
	return &config.Revision{ScaleToZeroPolicy: config.ScaleToZeroLearned, ColdStartCost: 2 * time.Minute,
		PrewarmLead: 10 * time.Second, TickInterval: 2 * time.Second}
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
	if size := unsafe.Sizeof(Policy{}); size > 1024 {
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
			h := gapsOf(tt.gaps)
			h.recompute(&predictorTable[PredictorHistogram], tt.cost, parking{}, 0)
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

// keptRanges returns the ranges [from, to) of idle seconds whose bins a
// set of keep bits keeps.
func keptRanges(keep *[128]uint8) [][2]int64 {
	var out [][2]int64
	for b := range gapBins - 1 {
		if keep[b] == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1][1] == gapEdges[b] {
			out[n-1][1] = gapEdges[b+1]
			continue
		}
		out = append(out, [2]int64{gapEdges[b], gapEdges[b+1]})
	}
	return out
}

// TestParkBits: the keep bits of a parked replica (parkBits) follow the
// cost model: a parked second costs parked-cost of an awake one, so they
// keep what the awake bits keep and more; they bridge a stretch that no
// gap ends in when the gaps after it pay for it; past the longest gap the
// scale-free prior keeps a parked replica while a cold start is worth the
// parked time; nothing is kept past max-parked-duration.
func TestParkBits(t *testing.T) {
	tests := []struct {
		name string
		gaps map[int64]int
		cost float64 // cold start, awake replica-seconds
		park parking
		// want: the kept ranges of idle seconds, awake and parked.
		awake, parked [][2]int64
	}{
		// Past the timer (the longest gap) the scale-free prior keeps it
		// parked while a cold start (1200 parked seconds) pays for the
		// odds.
		{name: "a timer at 10 min: the awake replica waits for it, the parked one keeps the whole gap and more",
			gaps: map[int64]int{5: 40, 600: 20}, cost: 120, park: parking{cost: 0.1},
			awake: [][2]int64{{5, 8}, {599, 659}}, parked: [][2]int64{{2, 1287}}},
		// At the awake price, the parked bits still bridge the seconds
		// before the short gaps' bins, which lead to them.
		{name: "a dear parked second: no bridge to the timer", gaps: map[int64]int{5: 40, 600: 20}, cost: 120, park: parking{cost: 1},
			awake: [][2]int64{{5, 8}, {599, 659}}, parked: [][2]int64{{2, 8}, {599, 659}}},
		// The bridge to the timer would outlast max-parked-duration: the
		// timer's bins are kept for a pre-warm.
		{name: "max-parked-duration bounds it", gaps: map[int64]int{5: 40, 600: 20}, cost: 120, park: parking{cost: 0.1, max: 300},
			awake: [][2]int64{{5, 8}, {599, 659}}, parked: [][2]int64{{2, 8}, {599, 659}}},
		{name: "a cheap cold start keeps little even parked", gaps: map[int64]int{5: 40, 600: 20}, cost: 1, park: parking{cost: 0.1},
			awake: nil, parked: [][2]int64{{2, 6}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := gapsOf(tt.gaps)
			h.recompute(&predictorTable[PredictorHistogram], tt.cost, tt.park, 0)
			if diff := cmp.Diff(tt.awake, keptRanges(&h.keepPhases)); diff != "" {
				t.Errorf("awake (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.parked, keptRanges(&h.parkPhases)); diff != "" {
				t.Errorf("parked (-want +got):\n%s", diff)
			}
			for b := range gapBins {
				if h.keepPhases[b] > 0 && h.parkPhases[b] == 0 {
					t.Errorf("bin [%d, ...) kept awake but not parked", gapEdges[b])
				}
			}
			var off idleGaps
			off.counts, off.total = h.counts, h.total
			off.recompute(&predictorTable[PredictorHistogram], tt.cost, parking{}, 0)
			if off.keepPhases != h.keepPhases || off.parkPhases != [128]uint8{} {
				t.Error("parking changed the awake bits, or parking off kept parked bits")
			}
		})
	}
}

// gapsOf is a history of idle gaps: n gaps of each length g.
func gapsOf(gaps map[int64]int) idleGaps {
	var h idleGaps
	for g, n := range gaps {
		for range n {
			h.add(g, 0)
		}
	}
	return h
}
