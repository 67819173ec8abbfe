package decider

import (
	"time"

	"ebb.dev/ebb/pkg/config"
)

// Second is what one second of a revision brings to its decider: the
// revision-wide metric averages (when any was recorded), the pods with
// their own samples (when known), and the ready and reachable state when
// they changed.
type Second struct {
	// HasMetric is false when nothing was recorded that second.
	HasMetric        bool
	Concurrency, RPS float64
	Ready            *int32 // nil: unchanged
	Reachable        *bool  // nil: unchanged
	// Pods are the revision's pods at this second with their samples. The
	// KPA class does not read them. The HPA class does; when they are nil
	// and HasMetric is set, it derives them from the totals (see
	// DerivePods).
	Pods []PodSample
}

// PodSample is one pod at one second: its state, and its per-pod metric
// values when it was sampled (nil: no sample that second).
type PodSample struct {
	Name string
	// Phase is Pending, Running, Succeeded or Failed; "" means Running.
	Phase    string
	Ready    bool
	Deleting bool
	// Concurrency and RPS are requests in flight and received per second;
	// CPU and Memory are percentages of the pod's request.
	Concurrency, RPS, CPU, Memory *float64
	// HPA class, live platforms (see hpapods.go): the pod's start time and
	// the last transition of its Ready condition (zero: the first second
	// the pod was listed, and the second its Ready changed), and its
	// containers' resource usage and requests (nil: use CPU and Memory).
	Started, ReadySince time.Time
	Containers          []ContainerSample
}

// classDecider is a decider class behind the Stepper's schedule.
type classDecider interface {
	// record takes in one second (with data); ready is the current count.
	record(now time.Time, in *Second, ready int32)
	// wantsPoke reports whether the second calls for a decision at once.
	wantsPoke(in *Second) bool
	decide(in Input, dec *Decision)
}

// Stepper feeds a Decider one second at a time and decides on its schedule:
// at every second that is a multiple of the tick interval counted from the
// tick origin, and on a poke (a non-tick second whose concurrency is not 0
// while the recommendation is exactly 0). `autoscaler simulate` and the live
// autoscaler share it, which is what makes a recording replay to the same
// decisions. One goroutine owns a Stepper.
type Stepper struct {
	cls       classDecider
	kpa       *Decider // nil for the HPA class
	origin    int64    // unix second ticks are counted from
	tick      int64    // seconds
	ready     int32
	reachable bool
	cur       Second // the second being recorded (see StepInto)
	refused   int    // seconds with a value out of bounds since the last decision
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
	// Inactive starts the KPA class's scale target inactive at zero (no
	// traffic, since First), its initial scale counted as reached and the
	// activator in the path, instead of activating at the initial scale:
	// a decider that restarts for a revision already scaled to zero (a
	// new configuration, an autoscaler restart, a bucket changing hands)
	// keeps it there until traffic comes, as a revision's scale state
	// outlives its decider. The HPA class ignores it (it keeps a pod).
	Inactive bool
}

// NewStepper returns a stepper for rev: the HPA class's decider when
// rev.Class is config.ClassHPA, else the KPA's.
func NewStepper(rev *config.Revision, o StepperOptions) *Stepper {
	origin := o.TickOrigin
	if origin.IsZero() {
		origin = o.First
	}
	s := &Stepper{
		origin:    origin.Unix(),
		tick:      max(int64(rev.TickInterval/time.Second), 1),
		ready:     o.Ready,
		reachable: true,
	}
	if rev.Class == config.ClassHPA {
		s.cls = newHPA(rev, o.Ready)
	} else {
		s.kpa = New(rev, o.First, o.Ready)
		if o.Inactive {
			s.kpa.target = inactiveTargetState(o.First)
		}
		s.cls = s.kpa
	}
	return s
}

// Decider is the stepper's KPA decider; nil with the HPA class.
func (s *Stepper) Decider() *Decider { return s.kpa }

// Ready is the current ready pod count.
func (s *Stepper) Ready() int32 { return s.ready }

// Reachable is the current reachability.
func (s *Stepper) Reachable() bool { return s.reachable }

// Step takes in the second now (whole seconds; call it once per second, in
// order, also for seconds without data) and decides when the schedule says
// so. It reports whether a decision was made.
func (s *Stepper) Step(now time.Time, in Second) (Decision, bool) {
	var dec Decision
	ok := s.StepInto(now, in, &dec)
	return dec, ok
}

// StepInto is Step writing the decision into dec (overwritten when a
// decision is made, untouched otherwise).
func (s *Stepper) StepInto(now time.Time, in Second, dec *Decision) bool {
	if in.Ready != nil {
		s.ready = *in.Ready
	}
	if s.kpa != nil {
		s.kpa.observeReady(now, s.ready)
	}
	if in.Reachable != nil {
		s.reachable = *in.Reachable
	}
	if refuseOutOfBounds(&in) {
		s.refused++
	}
	poke := false
	if in.HasMetric || in.Pods != nil {
		// The classes take the second by pointer; s.cur keeps it off the
		// heap (a pointer to the parameter would escape through the
		// interface on every second).
		s.cur = in
		s.cls.record(now, &s.cur, s.ready)
		poke = s.cls.wantsPoke(&s.cur)
		s.cur = Second{}
	}
	if (now.Unix()-s.origin)%s.tick != 0 && !poke {
		return false
	}
	s.cls.decide(Input{Now: now, Ready: s.ready, Reachable: s.reachable}, dec)
	if s.refused > 0 {
		dec.add(metricRefusedReason(float64(s.refused), maxMetricValue))
		s.refused = 0
	}
	return true
}

// Decides reports whether StepInto(now, in) would decide: now is a tick,
// or in pokes (the KPA class at zero, and traffic in the second). It reads
// the stepper before the step, as StepInto's poke does: taking in a
// second (the ready count, the windows) changes neither the
// recommendation nor the scale target that a poke reads, only a decision
// does. A caller that must copy the stepper before a second that may
// decide (the hold of a scale to zero) copies it on these seconds only.
func (s *Stepper) Decides(now time.Time, in Second) bool {
	if (now.Unix()-s.origin)%s.tick == 0 {
		return true
	}
	refuseOutOfBounds(&in)
	if !in.HasMetric && in.Pods == nil {
		return false
	}
	s.cur = in // off the heap, as in StepInto
	poke := s.cls.wantsPoke(&s.cur)
	s.cur = Second{}
	return poke
}

// record, wantsPoke and decide make the KPA Decider a classDecider: it
// reads the revision-wide totals only.
func (d *Decider) record(now time.Time, in *Second, _ int32) {
	if in.HasMetric {
		d.Record(now, in.Concurrency, in.RPS)
	}
}

func (d *Decider) wantsPoke(in *Second) bool { return in.HasMetric && d.WantsPoke(in.Concurrency) }

func (d *Decider) decide(in Input, dec *Decision) { d.decideInto(in, dec) }
