package secondloop

import (
	"sync"
	"time"

	"ebb.dev/ebb/pkg/scaling/decider"
	"ebb.dev/ebb/pkg/stats"
)

// LateBound is how many closes a scale to zero waits for late reports:
// the zero decided at the close of second T applies at the close of
// T+LateBound, so a report of T (or earlier) has about LateBound seconds
// after T's close to arrive and re-decide. A report later than that
// counts in the open second, as every late report outside a hold does.
const LateBound = 2

// Closing is what one close brings: the revision's ready pods, what its
// pods' scrapes gave, and the activator reports taken from its Inbox.
type Closing struct {
	Sec   int64
	Ready int32
	// The KPA class: the pods' scraped totals (Scraped false: none).
	Scraped          bool
	Concurrency, RPS float64
	// The HPA class (PerPod): every pod with its own sample, and the pods'
	// direct totals (the activator's part left out).
	PerPod bool
	Pods   []decider.PodSample
	Direct [2]float64
	// Reports are the on-time reports, Late those of closed seconds.
	Reports []stats.Stat
	Late    []Late
}

// Sink is the caller's side of a Loop: where the stepper comes from and
// where the seconds and decisions go.
type Sink interface {
	// Start returns the stepper of a revision whose first second is sec.
	Start(sec int64, ready int32) *decider.Stepper
	// Decided sees each decision; again is set for a second decided
	// anew (a late report re-decided it, or the close of a second a
	// resting revision skipped).
	Decided(sec int64, dec *decider.Decision, again bool)
	// Apply applies a decision to the platform: at once, or a held scale
	// to zero when its hold ends. ok false: it failed (the next decision
	// applies again).
	Apply(dec *decider.Decision) (ok bool)
	// Final sees each stepped second once its input can change no more,
	// in order (a recording writes it then).
	Final(sec int64, in decider.Second)
}

// Loop is one revision's loop. The zero value is ready: its stepper
// starts with the first close. One goroutine owns it.
type Loop struct {
	Stepper *decider.Stepper // nil until the first close
	Last    int64            // the last second stepped
	// Slept is set by a caller that skipped seconds of a revision at rest
	// (decider.Stepper.Rest): the next close decides the last tick once
	// and steps no gap.
	Slept bool

	applied int32 // the replica count last applied; -1: unknown
	known   bool  // applied is known
	hold    *hold
	journal []entry // the inputs of the seconds stepped in a hold, from hold.from
	ready   int32   // what the stepper's input points to
	// copyBefore copies the stepper before each second that may hold a
	// zero, as the loop did before it marked them (decider.Stepper.MarkInto):
	// the tests compare the two.
	copyBefore bool
}

// hold is a scale to zero waiting for late reports.
type hold struct {
	from   int64            // the second that decided it
	before *decider.Stepper // the stepper before from
	until  int64            // the close at which it applies
	dec    decider.Decision // the decision to apply
}

// entry is one second's input, kept while a hold lasts.
type entry struct {
	sec     int64
	ready   int32
	scraped bool
	conc    float64
	rps     float64
	reports []stats.Stat
}

// Holding reports whether a scale to zero is held.
func (l *Loop) Holding() bool { return l.hold != nil }

// Reset forgets the stepper (a new configuration restarts it at the next
// close) and any hold: the new decider decides afresh.
func (l *Loop) Reset(sink Sink) {
	l.endHold(sink)
	l.Stepper, l.Slept = nil, false
}

// Close closes second c.Sec (a second at or before Last is closed
// already: nothing happens). It re-decides a held scale to zero with late
// reports, steps the seconds missed since Last as gaps, steps c.Sec, and
// applies a held zero whose hold has ended.
func (l *Loop) Close(c *Closing, sink Sink) {
	if l.Stepper != nil && c.Sec <= l.Last {
		return
	}
	if l.Stepper == nil {
		l.Stepper, l.Last, l.known = sink.Start(c.Sec, c.Ready), c.Sec-1, false
	}
	reports := l.takeLate(c, sink)
	if l.Slept {
		l.Slept = false
		if t := l.Stepper.LastTick(time.Unix(c.Sec-1, 0)).Unix(); t > l.Last {
			l.stepOne(entry{sec: t, ready: -1}, nil, sink, true) // it changes nothing
		}
	}
	for s := l.Last + 1; s < c.Sec; s++ { // missed seconds are gaps
		l.stepOne(entry{sec: s, ready: -1}, nil, sink, false)
	}
	e := entry{sec: c.Sec, ready: c.Ready, scraped: c.Scraped, conc: c.Concurrency, rps: c.RPS, reports: reports}
	l.stepOne(e, c, sink, false)
	if h := l.hold; h != nil && c.Sec >= h.until {
		l.endHold(sink)
		l.applyDecision(&h.dec, sink)
	}
}

// takeLate sorts the late reports: into the held seconds (and re-decides
// them) while a hold lasts, else into the open second. It returns the
// reports of the open second.
func (l *Loop) takeLate(c *Closing, sink Sink) []stats.Stat {
	if len(c.Late) == 0 {
		return c.Reports
	}
	if l.hold == nil {
		for _, lr := range c.Late {
			c.Reports = append(c.Reports, lr.Stat)
		}
		return c.Reports
	}
	for _, lr := range c.Late {
		i := max(lr.Sec-l.hold.from, 0)
		if i >= int64(len(l.journal)) {
			c.Reports = append(c.Reports, lr.Stat) // (not stepped yet)
			continue
		}
		l.journal[i].reports = merge(l.journal[i].reports, lr.Stat)
	}
	l.restep(sink)
	return c.Reports
}

// merge adds a late report to a second's reports by stats.Pending's rule.
func merge(reports []stats.Stat, st stats.Stat) []stats.Stat {
	var p stats.Pending
	for _, r := range reports {
		p.Add(r)
	}
	p.Add(st)
	out, _ := p.Take(nil)
	return out
}

// restep decides the held seconds again from the stepper before them.
func (l *Loop) restep(sink Sink) {
	h, journal := l.hold, l.journal
	l.hold, l.journal = nil, nil
	l.Stepper = h.before
	for _, e := range journal {
		l.stepOne(e, nil, sink, true)
	}
	l.Last = max(l.Last, journal[len(journal)-1].sec)
}

// stepOne steps one second: e's input (a gap when e.ready < 0), or the
// HPA class's pods of c. A decision that scales running replicas to zero
// is held (with a copy of the stepper from before it, taken at every
// second that decides while replicas run: decider.Stepper.Decides); any
// other applies at once and ends a hold (the zero it held is not applied).
func (l *Loop) stepOne(e entry, c *Closing, sink Sink, again bool) {
	l.Last = e.sec
	now := time.Unix(e.sec, 0)
	in := l.second(&e, c)
	var before *decider.Stepper
	var mark *decider.Mark                                                                        // a cheaper before: copied only when a zero is decided
	if l.hold == nil && l.running() && l.Stepper.Decider() != nil && l.Stepper.Decides(now, in) { // only the KPA class has a copy
		if mark = marks.Get().(*decider.Mark); l.copyBefore || !l.Stepper.MarkInto(mark, now) {
			marks.Put(mark)
			mark = nil
			before, _ = l.Stepper.CloneInto(spares.Get().(*decider.Stepper))
		}
	}
	dec := decisionPool.Get().(*decider.Decision) // about 1 KiB: not kept per revision
	defer decisionPool.Put(dec)
	decided := l.Stepper.StepInto(now, in, dec)
	zero := decided && dec.Desired == 0
	if mark != nil {
		if zero && l.hold == nil {
			before = l.Stepper.BeforeInto(mark, spares.Get().(*decider.Stepper))
		}
		marks.Put(mark)
	}
	if zero && l.hold == nil && before != nil {
		l.hold = &hold{from: e.sec, before: before, until: e.sec + LateBound}
	} else if before != nil {
		spares.Put(before) // no zero: the copy is not needed
	}
	if l.hold != nil {
		e.reports = append([]stats.Stat(nil), e.reports...) // the caller's buffer is reused
		l.journal = append(l.journal, e)
	} else {
		sink.Final(e.sec, in)
	}
	if !decided {
		return
	}
	sink.Decided(e.sec, dec, again)
	switch {
	case zero && l.hold != nil:
		l.hold.dec = *dec
	default:
		l.endHold(sink)
		l.applyDecision(dec, sink)
	}
}

// second is e's input to the stepper.
func (l *Loop) second(e *entry, c *Closing) decider.Second {
	if e.ready < 0 {
		return decider.Second{}
	}
	l.ready = e.ready
	if c != nil && c.PerPod {
		return secondOfPods(c.Pods, c.Direct, e.reports, &l.ready)
	}
	return decider.SecondOf(&l.ready, e.scraped, e.conc, e.rps, e.reports)
}

// secondOfPods combines per-pod samples and activator reports (the HPA
// class): the totals (for the records and the charts) are the pods'
// direct load plus the activator's report, as for the KPA.
func secondOfPods(pods []decider.PodSample, direct [2]float64, reports []stats.Stat, ready *int32) decider.Second {
	conc, rps := decider.ActivatorTotals(reports)
	any := len(reports) > 0
	for _, p := range pods {
		any = any || p.Concurrency != nil
	}
	return decider.Second{Pods: pods, HasMetric: any, Concurrency: conc + direct[0], RPS: rps + direct[1], Ready: ready}
}

// running reports whether the revision may have replicas: a zero applied
// to it now would scale it to zero.
func (l *Loop) running() bool { return !l.known || l.applied > 0 }

func (l *Loop) applyDecision(dec *decider.Decision, sink Sink) {
	if sink.Apply(dec) {
		l.applied, l.known = dec.Desired, true
	} else {
		l.known = false
	}
}

// endHold ends a hold without applying it: the held seconds are final.
func (l *Loop) endHold(sink Sink) {
	l.hold = nil
	for i := range l.journal {
		e := &l.journal[i]
		sink.Final(e.sec, l.second(e, nil))
	}
	clear(l.journal)
	l.journal = l.journal[:0]
}

// decisionPool lends Decisions to the loops' steps.
var decisionPool = sync.Pool{New: func() any { return new(decider.Decision) }}

// marks lends the marks taken instead of a copy before a second that may
// decide a zero (decider.Stepper.MarkInto): only a zero decided turns one
// into a copy.
var marks = sync.Pool{New: func() any { return new(decider.Mark) }}

// spares lends the copies taken before a decision that may scale to zero
// (decider.Stepper.CloneInto reuses their memory): only a held zero keeps
// one.
var spares = sync.Pool{New: func() any { return new(decider.Stepper) }}
