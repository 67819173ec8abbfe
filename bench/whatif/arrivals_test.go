package main

import (
	"slices"
	"testing"

	"ebb.dev/ebb/pkg/whatif"
)

// TestSpreadArrivalsRandom: each invocation stays in its minute, the
// arrivals ascend, and the same function gets the same seconds in every
// run; another function gets others.
func TestSpreadArrivalsRandom(t *testing.T) {
	mk := func() []whatif.Function {
		return []whatif.Function{
			{Hash: "a", Invocations: []uint32{1, 0, 3, 60, 1}},
			{Hash: "b", Invocations: []uint32{1, 0, 3, 60, 1}},
		}
	}
	fns, again := mk(), mk()
	if err := spreadArrivals(fns, arrivalsRandom); err != nil {
		t.Fatal(err)
	}
	if err := spreadArrivals(again, arrivalsRandom); err != nil {
		t.Fatal(err)
	}
	for j := range fns {
		f := &fns[j]
		if int64(len(f.Arrivals)) != 65 || !slices.IsSorted(f.Arrivals) {
			t.Fatalf("%s: %d arrivals, sorted %v; want 65, sorted", f.Hash, len(f.Arrivals), slices.IsSorted(f.Arrivals))
		}
		i := 0
		for m, n := range f.Invocations {
			for range n {
				if s := f.Arrivals[i]; s < 60*int64(m) || s >= 60*int64(m+1) {
					t.Errorf("%s: arrival %d at second %d, outside minute %d", f.Hash, i, s, m+1)
				}
				i++
			}
		}
		if !slices.Equal(f.Arrivals, again[j].Arrivals) {
			t.Errorf("%s: another run spread it otherwise", f.Hash)
		}
	}
	if slices.Equal(fns[0].Arrivals, fns[1].Arrivals) {
		t.Error("two functions got the same seconds")
	}
	if err := spreadArrivals(mk(), "uniform"); err == nil {
		t.Error(`-arrivals "uniform" accepted`)
	}
	even := mk()
	if err := spreadArrivals(even, arrivalsEven); err != nil || even[0].Arrivals != nil {
		t.Errorf("even: %v, arrivals %v; want whatif's own spread", err, even[0].Arrivals)
	}
}
