package decider

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
