package decider

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/behavior"
	"ebb.dev/ebb/pkg/config"
)

// cloneInput is a random second: bursts of load, idle stretches that let
// the revision go to zero, ready counts that follow.
func cloneInput(rng *rand.Rand, ready *int32) Second {
	if rng.IntN(10) == 0 {
		*ready = int32(rng.IntN(4))
	}
	r := *ready
	if rng.IntN(3) > 0 {
		return Second{Ready: &r}
	}
	c := float64(rng.IntN(300))
	return Second{HasMetric: true, Concurrency: c, RPS: c * 2, Ready: &r}
}

// TestCloneIsIndependent: a clone steps to the very decisions of its
// original, and stepping it (with other input) changes nothing of the
// original, for every part of the KPA decider's state (windows, scale-down
// delay, behavior history, learned policy).
func TestCloneIsIndependent(t *testing.T) {
	revs := map[string]*config.Revision{"knative": knativeDefaults(), "learned": learnedRevision()}
	rich := knativeDefaults()
	rich.ScaleDownDelay = 10 * time.Second
	rich.Behavior = &behavior.Behavior{ScaleDown: &behavior.Rules{StabilizationWindowSeconds: ptrTo(int32(30))}}
	revs["delay and behavior"] = rich
	for name, rev := range revs {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			var ready int32 = 1
			inputs := make([]Second, 1200)
			for i := range inputs {
				inputs[i] = cloneInput(rng, &ready)
			}
			run := func(s *Stepper, from int, in []Second) []Decision {
				var out []Decision
				for i, x := range in {
					if d, ok := s.Step(at(int64(from+i)), x); ok {
						out = append(out, d)
					}
				}
				return out
			}
			for _, cut := range []int{0, 1, 150, 999} {
				ref := NewStepper(rev, StepperOptions{First: at(0), Ready: 1})
				run(ref, 0, inputs[:cut])
				c, ok := ref.clone()
				if !ok {
					t.Fatal("no clone of a KPA stepper")
				}
				other := rand.New(rand.NewPCG(3, 4))
				var r2 int32 = 2
				for i := cut; i < cut+300; i++ { // the clone lives a life of its own
					c.Step(at(int64(i)), cloneInput(other, &r2))
				}
				fresh := NewStepper(rev, StepperOptions{First: at(0), Ready: 1})
				want := run(fresh, 0, inputs)[len(run(NewStepper(rev, StepperOptions{First: at(0), Ready: 1}), 0, inputs[:cut])):]
				got := run(ref, cut, inputs[cut:])
				if diff := cmp.Diff(want, got, cmp.AllowUnexported(Decision{})); diff != "" {
					t.Fatalf("cut at %d: the original stepped differently after its clone did (-want +got):\n%s", cut, diff)
				}
				ref2 := NewStepper(rev, StepperOptions{First: at(0), Ready: 1})
				run(ref2, 0, inputs[:cut])
				// Into the memory of a used stepper of another revision.
				dirty := NewStepper(rich, StepperOptions{First: at(0), Ready: 3})
				run(dirty, 0, inputs[:200])
				c2, _ := ref2.CloneInto(dirty)
				if diff := cmp.Diff(run(ref2, cut, inputs[cut:]), run(c2, cut, inputs[cut:]), cmp.AllowUnexported(Decision{})); diff != "" {
					t.Fatalf("cut at %d: the clone decides unlike its original (-original +clone):\n%s", cut, diff)
				}
			}
		})
	}
	if _, ok := NewStepper(&config.Revision{Class: config.ClassHPA, StableWindow: time.Minute, TickInterval: time.Second},
		StepperOptions{First: at(0)}).clone(); ok {
		t.Error("an HPA stepper cloned: the class never scales to zero and has no clone")
	}
}
