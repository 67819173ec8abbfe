package decider

// Clone returns a copy of the stepper that shares no mutable state with
// it: stepping one leaves the other as it was. It is what lets a caller
// decide a second again (the autoscaler's hold of a scale to zero: a
// report that arrives after its second was closed re-decides from a copy
// taken before it). Only the KPA class has one (ok false for the HPA
// class, which never scales to zero). The configuration and the learned
// policy's predictor are shared: neither changes.
func (s *Stepper) Clone() (_ *Stepper, ok bool) {
	if s.kpa == nil {
		return nil, false
	}
	c := *s
	c.kpa = s.kpa.clone()
	c.cls = c.kpa
	return &c, true
}

func (d *Decider) clone() *Decider {
	c := *d
	c.stableWin, c.panicWin = d.stableWin.Clone(), d.panicWin.Clone()
	if d.delay != nil {
		c.delay = d.delay.Clone()
	}
	if d.history != nil {
		c.history = d.history.Clone()
	}
	if d.learned != nil {
		l := *d.learned // values only (arrays and numbers), and the shared predictor
		c.learned = &l
	}
	return &c
}
