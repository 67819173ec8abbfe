package decider

import "time"

// A revision at zero without traffic is at rest: its stable window holds
// nothing, no pod is ready, and its scale target is inactive at zero with
// the activator in the path. From there, seconds that bring no data and
// leave the ready count at 0 change nothing: every decision they bring is
// the last one again (only the numbers of its reasons move, such as the
// time spent inactive), and none of them changes the decider. A caller may
// therefore skip them (no step, no decision) and step the next second that
// brings something as if it had stepped them all: the decisions it makes
// from then on are those of a stepper that stepped every second. The live
// autoscaler lets most of a serverless population sleep this way.
//
// The one change at rest that no input causes is the learned policy's
// pre-warm: it starts a replica ahead of the range of idle time worth one.
// Rest says when that may happen (its wake), and the caller steps every
// second again from then on.

// Rest reports whether the stepper is at rest after dec, the decision it
// has just made, and until when: wake is the first second whose decision
// may differ from dec with no input (the learned policy's pre-warm), zero
// when none may. It is conservative: a decision that carries any reason
// other than those of a revision resting at zero (a state change, a
// timer still running, a bound) is not at rest, so the stepper rests from
// the decision after one that changed something.
func (s *Stepper) Rest(dec *Decision) (wake time.Time, ok bool) {
	if s.kpa == nil || s.ready != 0 || s.refused != 0 || dec.HasData || dec.Desired != 0 ||
		dec.State != inactive || !dec.ActivatorInPath {
		return time.Time{}, false
	}
	for _, r := range dec.Reasons() {
		switch r.Code {
		case NoData, NoMetricsYet, ScaledToZero, ActivatorNoReadyPods, LearnedFallback:
		case LearnedRelease:
			// secondsUntil is the idle time left before the next range
			// worth a replica (-1: none); the pre-warm starts a lead
			// before it. The lead is the policy's own (learned from
			// start-ups under prewarm-lead auto), not the annotation's text.
			secondsUntil := r.values[0]
			if p := s.kpa.learned; secondsUntil >= 0 && p != nil {
				wake = dec.At.Add(time.Duration(secondsUntil*float64(time.Second)) - time.Duration(p.Lead())*time.Second)
			}
		default:
			return time.Time{}, false
		}
	}
	return wake, true
}

// Trim lets go of what the stepper holds for nothing at now: the rings of
// its empty metric windows (all of them at rest), which come back with
// the next data. Every later step is about a second after now, as steps
// are.
func (s *Stepper) Trim(now time.Time) {
	if d := s.kpa; d != nil {
		d.stableWin.Trim(now)
		d.panicWin.Trim(now)
	}
}

// LastTick returns the last second at or before t at which the stepper
// decides on its schedule (a tick; pokes aside).
func (s *Stepper) LastTick(t time.Time) time.Time {
	sec := t.Unix()
	off := (sec - s.origin) % s.tick
	if off < 0 {
		off += s.tick
	}
	return time.Unix(sec-off, 0)
}
