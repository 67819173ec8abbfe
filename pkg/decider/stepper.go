package decider

import (
	"time"

	"ebb.dev/ebb/pkg/config"
)

// Second is what one second of a revision brings to its decider: the
// revision-wide metric averages (when any was recorded), and the ready and
// reachable state when they changed.
type Second struct {
	// HasMetric is false when nothing was recorded that second.
	HasMetric        bool
	Concurrency, RPS float64
	Ready            *int32 // nil: unchanged
	Reachable        *bool  // nil: unchanged
}

// Stepper feeds a Decider one second at a time and decides on its schedule:
// at every second that is a multiple of the tick interval counted from the
// tick origin, and on a poke (a non-tick second whose concurrency is not 0
// while the recommendation is exactly 0). `autoscaler simulate` and the live
// autoscaler share it, which is what makes a recording replay to the same
// decisions. One goroutine owns a Stepper.
type Stepper struct {
	d         *Decider
	origin    int64 // unix second ticks are counted from
	tick      int64 // seconds
	ready     int32
	reachable bool
}

// StepperOptions start a Stepper.
type StepperOptions struct {
	// First is the first second; the decider is created then.
	First time.Time
	// Ready is the ready pod count at First.
	Ready int32
	// TickOrigin is the second ticks are counted from (ticks fall on
	// TickOrigin + k*tick-interval). Zero: First.
	TickOrigin time.Time
}

// NewStepper returns a stepper for rev.
func NewStepper(rev *config.Revision, o StepperOptions) *Stepper {
	origin := o.TickOrigin
	if origin.IsZero() {
		origin = o.First
	}
	return &Stepper{
		d:         New(rev, o.First, o.Ready),
		origin:    origin.Unix(),
		tick:      max(int64(rev.TickInterval/time.Second), 1),
		ready:     o.Ready,
		reachable: true,
	}
}

// Decider is the stepper's decider.
func (s *Stepper) Decider() *Decider { return s.d }

// Ready is the current ready pod count.
func (s *Stepper) Ready() int32 { return s.ready }

// Reachable is the current reachability.
func (s *Stepper) Reachable() bool { return s.reachable }

// Step takes in the second now (whole seconds; call it once per second, in
// order, also for seconds without data) and decides when the schedule says
// so. It reports whether a decision was made.
func (s *Stepper) Step(now time.Time, in Second) (Decision, bool) {
	if in.Ready != nil {
		s.ready = *in.Ready
	}
	if in.Reachable != nil {
		s.reachable = *in.Reachable
	}
	poke := false
	if in.HasMetric {
		s.d.Record(now, in.Concurrency, in.RPS)
		poke = s.d.WantsPoke(in.Concurrency)
	}
	if (now.Unix()-s.origin)%s.tick != 0 && !poke {
		return Decision{}, false
	}
	return s.d.Decide(Input{Now: now, Ready: s.ready, Reachable: s.reachable}), true
}
