package decider

import (
	"slices"
	"time"
)

// State is the scale target's activation state (Knative's PA Active
// condition: Unknown, True, False).
type State uint8

// States of the scale target.
const (
	activating State = iota
	active
	inactive
)

func (s State) String() string {
	switch s {
	case activating:
		return "activating"
	case active:
		return "active"
	case inactive:
		return "inactive"
	}
	return "unknown"
}

// maxReasons bounds the reasons of one decision; a decision has far fewer.
const maxReasons = 16

// Decision is the outcome of one Decide call.
type Decision struct {
	At time.Time
	// Class is the class of the decider that decided (config.ClassKPA or
	// config.ClassHPA).
	Class string
	// Recommended is the decider's recommendation after rate limits, panic,
	// activation scale and scale-down delay, before min/max/initial scale and
	// scale to zero; -1 until the first decision with data.
	Recommended int32
	// Desired is the replica count of the scale target after every bound.
	Desired int32
	// Panic reports whether the decider is in panic mode.
	Panic bool
	// EBC is the excess burst capacity: negative means not enough spare
	// capacity for target-burst-capacity.
	EBC int32
	// ActivatorInPath reports whether requests go through the activator.
	ActivatorInPath bool
	// State is the scale target's activation state after the decision.
	State State
	// AtZero reports whether traffic should poke the decider at once
	// (WantsPoke): the recommendation is 0, or the learned scale-to-zero
	// policy released the last replica.
	AtZero bool
	// Parked reports whether the revision's one replica (Desired 1) is
	// parked (park.go): running with its requests lowered, the activator
	// in the path, woken by the next load.
	Parked bool
	// HasData reports whether the recommendation was recomputed from data.
	HasData bool
	// Stable and PanicAverage are the observed averages of the scaling
	// metric (valid when HasData). With the HPA class Stable is the usage
	// of the metric that gave the count (per-pod average, or utilization
	// percent) and PanicAverage is 0.
	Stable, PanicAverage float64

	reasons  [maxReasons]Reason
	nReasons int
}

// Reasons returns the reasons of the decision, in the order they arose.
func (d *Decision) Reasons() []Reason { return d.reasons[:d.nReasons] }

// add records a reason; a second reason of the same code replaces the first
// (the scale target is reconciled until it settles, and the last pass
// speaks for all).
func (d *Decision) add(r Reason) {
	for i := range d.nReasons {
		if d.reasons[i].Code == r.Code {
			d.reasons[i] = r
			return
		}
	}
	if d.nReasons < maxReasons {
		d.reasons[d.nReasons] = r
		d.nReasons++
	}
}

// addKeyed records a reason; a second reason of the same code and Detail
// replaces the first (the HPA class gives one reason of a code per metric).
func (d *Decision) addKeyed(r Reason) {
	for i := range d.nReasons {
		if d.reasons[i].Code == r.Code && d.reasons[i].Detail == r.Detail {
			d.reasons[i] = r
			return
		}
	}
	if d.nReasons < maxReasons {
		d.reasons[d.nReasons] = r
		d.nReasons++
	}
}

// drop removes the reason of the given code, if any.
func (d *Decision) drop(c Code) {
	for i := range d.nReasons {
		if d.reasons[i].Code == c {
			copy(d.reasons[i:d.nReasons], d.reasons[i+1:d.nReasons])
			d.nReasons--
			return
		}
	}
}

// keepFrom drops the reasons at positions from mark on, except those of
// the given codes.
func (d *Decision) keepFrom(mark int, keep ...Code) {
	n := mark
	for i := mark; i < d.nReasons; i++ {
		if slices.Contains(keep, d.reasons[i].Code) {
			d.reasons[n] = d.reasons[i]
			n++
		}
	}
	clear(d.reasons[n:d.nReasons])
	d.nReasons = n
}
