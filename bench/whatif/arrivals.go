package main

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"

	"ebb.dev/ebb/pkg/whatif"
)

// The trace counts invocations per minute; whatif spreads each minute's
// evenly over it, so a minute with one invocation always has it at second
// 30, and a revision's long gaps all end at the same second of the minute
// whether its work runs on a schedule or not. -arrivals random places each
// invocation at a second of its minute drawn at random instead (seeded by
// the function's hash, so runs repeat): what the second of the minute is
// worth to a predictor when nothing in the trace is scheduled.

// Arrival spreads of -arrivals.
const (
	arrivalsEven   = "even"
	arrivalsRandom = "random"
)

// spreadArrivals sets each function's Arrivals by spread.
func spreadArrivals(fns []whatif.Function, spread string) error {
	switch spread {
	case arrivalsEven:
		return nil
	case arrivalsRandom:
	default:
		return fmt.Errorf("-arrivals %q: want %q or %q", spread, arrivalsEven, arrivalsRandom)
	}
	for j := range fns {
		f := &fns[j]
		h := fnv.New64a()
		h.Write([]byte(f.Hash))
		rng := rand.New(rand.NewPCG(h.Sum64(), 0x9e3779b97f4a7c15))
		list := make([]int64, 0, f.Requests())
		for m, n := range f.Invocations {
			from := len(list)
			for range n {
				list = append(list, 60*int64(m)+rng.Int64N(60))
			}
			slices.Sort(list[from:])
		}
		f.Arrivals = list
	}
	return nil
}
