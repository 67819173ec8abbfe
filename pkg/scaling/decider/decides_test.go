package decider

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// decidesInput is a random second for TestDecidesMatchesStep: long idle
// stretches (a revision goes to zero, where traffic pokes), bursts, values
// out of bounds, gaps, and ready counts that move.
func decidesInput(rng *rand.Rand, sec int64, ready *int32, hpa bool) Second {
	if sec%300 < 200 { // long enough for the stable window and the grace period to end
		var r int32
		*ready = 0
		if rng.IntN(50) == 0 {
			return Second{}
		}
		return Second{Ready: &r}
	}
	if rng.IntN(12) == 0 {
		*ready = int32(rng.IntN(4))
	}
	r := *ready
	switch n := rng.IntN(20); {
	case n < 9: // idle: no data
		return Second{Ready: &r}
	case n < 10: // a gap
		return Second{}
	case n < 11: // out of bounds
		return Second{HasMetric: true, Concurrency: math.Inf(1), RPS: 1, Ready: &r}
	}
	c := float64(rng.IntN(5)) * float64(rng.IntN(100))
	in := Second{HasMetric: true, Concurrency: c, RPS: c * 2, Ready: &r}
	if hpa && rng.IntN(2) == 0 {
		in.Pods = pods(f(c), nil, f(-1))[:rng.IntN(4)]
	}
	return in
}

// TestDecidesMatchesStep is the differential test of Stepper.Decides: on
// random seconds, for every class and with the learned policy, it says
// that a second decides exactly when StepInto then decides (the loop
// copies the stepper before those seconds only, to hold a scale to zero).
func TestDecidesMatchesStep(t *testing.T) {
	revs := map[string]func() *Stepper{
		"knative": func() *Stepper { return NewStepper(knativeDefaults(), StepperOptions{First: at(0), Ready: 1}) },
		"knative inactive": func() *Stepper {
			return NewStepper(knativeDefaults(), StepperOptions{First: at(0), Inactive: true})
		},
		"learned": func() *Stepper { return NewStepper(learnedRevision(), StepperOptions{First: at(0), Ready: 1}) },
		"tick 5s": func() *Stepper {
			rev := knativeDefaults()
			rev.TickInterval = 5 * time.Second
			return NewStepper(rev, StepperOptions{First: at(0), TickOrigin: at(3), Ready: 2})
		},
		"hpa": func() *Stepper { return NewStepper(hpaRevision(conc(10)), StepperOptions{First: at(0), Ready: 1}) },
	}
	for name, mk := range revs {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(len(name))))
			s := mk()
			var ready int32 = 1
			var dec Decision
			pokes, ticks := 0, 0
			for i := range int64(20_000) {
				in := decidesInput(rng, i, &ready, name == "hpa")
				now := at(i)
				want := s.Decides(now, in)
				got := s.StepInto(now, in, &dec)
				if want != got {
					t.Fatalf("second %d (%+v): Decides said %v, StepInto decided %v", i, in, want, got)
				}
				if got && !s.LastTick(now).Equal(now) {
					pokes++
				} else if got {
					ticks++
				}
			}
			if ticks == 0 {
				t.Fatal("no tick decided: the test proves nothing")
			}
			if name != "hpa" && pokes == 0 {
				t.Fatal("no poke decided: the inputs never reach zero and then bring traffic")
			}
		})
	}
}
