package paired

import (
	"slices"
	"testing"
)

// TestOrder: every target runs first once in as many slices as there are
// targets.
func TestOrder(t *testing.T) {
	targets := []string{"a", "b", "c"}
	firsts := map[string]int{}
	for s := range 3 {
		o := Order(targets, 1, s)
		if got := slices.Sorted(slices.Values(o)); !slices.Equal(got, targets) {
			t.Fatalf("slice %d: order %v is not the targets", s, o)
		}
		firsts[o[0]]++
	}
	for _, n := range targets {
		if firsts[n] != 1 {
			t.Errorf("%s ran first %d times in 3 slices, want 1", n, firsts[n])
		}
	}
}

// TestCompare: the median and middle half of the slices' ratios, the
// rounds' medians, and CPU per request from the totals; a slow slice
// moves the median little.
func TestCompare(t *testing.T) {
	var ss []Sample
	add := func(round, slice int, rps, bareRPS float64) {
		ss = append(ss,
			Sample{Test: "wrk", Target: "proxy", Round: round, Slice: slice, RPS: rps, Requests: rps, CPUSeconds: rps * 20e-6},
			Sample{Test: "wrk", Target: "bare", Round: round, Slice: slice, RPS: bareRPS, Requests: bareRPS, CPUSeconds: bareRPS * 16e-6},
			Sample{Test: "hey", Target: "proxy", Round: round, Slice: slice, RPS: 1})
	}
	add(0, 0, 96, 100)
	add(0, 1, 98, 100)
	add(0, 2, 50, 100) // a neighbour took the CPUs during the proxy's run
	add(1, 0, 97, 100)
	add(1, 1, 95, 100)
	c := Compare(ss, "wrk", "proxy", "bare")
	if c.Slices != 5 || c.Median != 0.96 || c.Q1 != 0.95 || c.Q3 != 0.97 {
		t.Errorf("slices %d, median %v, middle half %v-%v; want 5, 0.96, 0.95-0.97", c.Slices, c.Median, c.Q1, c.Q3)
	}
	if !slices.Equal(c.Rounds, []float64{0.96, 0.96}) {
		t.Errorf("rounds %v, want [0.96 0.96]", c.Rounds)
	}
	if c.CPU < 1.2499 || c.CPU > 1.2501 {
		t.Errorf("CPU ratio %v, want 1.25", c.CPU)
	}
	if c := Compare(ss, "hey", "proxy", "bare"); c.Slices != 0 {
		t.Errorf("hey compared %d slices without the bare proxy's", c.Slices)
	}
}
