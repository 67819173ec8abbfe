package decider

import (
	"time"

	"ebb.dev/ebb/pkg/scaling/window"
)

// clone returns a copy of the stepper that shares no mutable state with
// it: stepping one leaves the other as it was. It is what lets a caller
// decide a second again (the autoscaler's hold of a scale to zero: a
// report that arrives after its second was closed re-decides from a copy
// taken before it). Only the KPA class has one (ok false for the HPA
// class, which never scales to zero). The configuration and the learned
// policy's predictor are shared: neither changes.
func (s *Stepper) clone() (_ *Stepper, ok bool) { return s.CloneInto(nil) }

// CloneInto is Clone reusing the memory of dst (a stepper no one uses
// any more, of any revision; nil: none), so that a caller that copies
// often allocates nothing.
func (s *Stepper) CloneInto(dst *Stepper) (_ *Stepper, ok bool) {
	if s.kpa == nil {
		return nil, false
	}
	if dst == nil {
		dst = new(Stepper)
	}
	spare := dst.kpa
	*dst = *s
	dst.kpa = s.kpa.cloneInto(spare)
	dst.cls = dst.kpa
	return dst, true
}

// cloneInto copies d into dst's memory (nil: new).
func (d *Decider) cloneInto(dst *Decider) *Decider {
	if dst == nil {
		dst = new(Decider)
	}
	sw, pw, dw, lp := dst.stableWin, dst.panicWin, dst.delay, dst.learned
	*dst = *d
	dst.stableWin, dst.panicWin = d.stableWin.CloneInto(sw), d.panicWin.CloneInto(pw)
	if d.delay != nil {
		dst.delay = d.delay.CloneInto(dw)
	}
	if d.history != nil {
		dst.history = d.history.Clone()
	}
	if d.learned != nil {
		dst.learned = d.learned.CloneInto(lp)
	}
	return dst
}

// Mark is a stepper's state before one step, kept without copying its
// windows' rings (window.Mark): BeforeInto builds from it, after the
// step, the copy CloneInto would have returned before it. A caller that
// needs that copy only after some steps (a decision to scale to zero)
// marks at each of them instead of copying.
type Mark struct {
	step           Stepper
	kpa            Decider
	stable, panicW window.Mark
}

// MarkInto marks s before StepInto(now, ...), and reports whether it
// could. It cannot for the HPA class (CloneInto has no copy either), for
// a decider whose step changes more than its windows and its own fields
// (a scale-down delay, a behavior, the learned policy), nor when the
// step would rewrite a window (window.Buckets.MarkInto): the caller
// copies the stepper then.
func (s *Stepper) MarkInto(m *Mark, now time.Time) bool {
	d := s.kpa
	if d == nil || d.delay != nil || d.history != nil || d.learned != nil {
		return false
	}
	sec := now.Unix()
	if !d.stableWin.MarkInto(&m.stable, sec) || !d.panicWin.MarkInto(&m.panicW, sec) {
		return false
	}
	m.step, m.kpa = *s, *d
	return true
}

// BeforeInto returns, in dst's memory (nil: new), the copy of s that
// CloneInto would have returned when m was marked, s having taken one
// StepInto since, of the second m was marked for.
func (s *Stepper) BeforeInto(m *Mark, dst *Stepper) *Stepper {
	dst, _ = s.CloneInto(dst)
	d := dst.kpa
	sw, pw := d.stableWin, d.panicWin // d's own copies of the rings
	*d = m.kpa
	d.stableWin, d.panicWin = sw, pw
	sw.Undo(&m.stable)
	pw.Undo(&m.panicW)
	*dst = m.step
	dst.kpa, dst.cls = d, d
	return dst
}
