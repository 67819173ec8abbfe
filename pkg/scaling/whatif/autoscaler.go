package whatif

import (
	"time"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/decider"
	"ebb.dev/ebb/pkg/scaling/scenario"
	"ebb.dev/ebb/pkg/scaling/secondloop"
	"ebb.dev/ebb/pkg/scaling/whatif/compare"
	"ebb.dev/ebb/pkg/stats"
)

// report is the autoscaler taking an activator report (pkg/autoscaler
// revision.report): the revision's Inbox sorts it by its second (the
// simulated revision closes its seconds at their end: phase 0), and load
// while the recommendation is 0 pokes the revision. Reports arrive in
// time here: none is late.
func (s *sim) report(st stats.Stat) {
	s.inbox.Add(st, secondloop.SecondOf(st.Time, 0))
	if st.AverageConcurrency > 0 && s.atZero {
		s.poked = true
	}
}

// onPoke is the revision loop taking a poke at t: it closes the current
// second at once.
func (s *sim) onPoke(t int64) {
	if !s.poked {
		return
	}
	s.poked = false
	s.closeSecond(t / int64(time.Second))
}

// boundary is what happens at the whole second t: the activator and the
// queue-proxies cut their reports, the autoscaler closes the second that
// just ended, then takes a poke that arrived with the reports.
func (s *sim) boundary(t int64) {
	s.activatorReport(t)
	s.replicaReports(t)
	s.closeSecond(t/int64(time.Second) - 1)
	s.onPoke(t)
}

// closeSecond is the revision's second (pkg/autoscaler revision.second for
// the KPA class): the ready pods, their scraped totals and the activator
// reports close the second through the loop the autoscaler uses
// (secondloop.Loop); a second a poke closed already is not closed again.
func (s *sim) closeSecond(sec int64) {
	sec += epochSec // the loop counts unix seconds
	if s.loop.Stepper != nil && sec <= s.loop.Last {
		return
	}
	c := secondloop.Closing{Sec: sec, Ready: int32(s.nReady)}
	c.Scraped, c.Concurrency, c.RPS = s.scrape()
	c.Reports, c.Late, _ = s.inbox.Take(sec, s.reports[:0], s.late[:0]) // one activator: nothing is dropped
	s.loop.Close(&c, s)
}

// scrape reads every ready replica's latest report. The live autoscaler
// scrapes a sample past three pods and scales it to all of them; reading
// all of them is the value that estimate aims at.
func (s *sim) scrape() (ok bool, conc, rps float64) {
	if s.nReady == 0 || s.rev.TargetBurstCapacity == -1 {
		return false, 0, 0
	}
	var buf [8]stats.Stat
	sample := buf[:0]
	for _, r := range s.replicas {
		if r.ready {
			sample = append(sample, r.report)
		}
	}
	conc, rps = decider.PodTotals(sample, len(sample))
	return true, conc, rps
}

// Start is the loop's first second: the stepper, with the predictor
// under study.
func (s *sim) Start(sec int64, ready int32) *decider.Stepper {
	st := decider.NewStepper(s.rev, decider.StepperOptions{First: time.Unix(sec, 0), Ready: ready})
	if c := compare.New(s.predictor); c != nil {
		st.Decider().UseComparison(c)
	} else {
		st.Decider().UsePredictor(s.predictor)
	}
	return st
}

// Decided sees a decision (pkg/autoscaler publishes it).
func (s *sim) Decided(sec int64, dec *decider.Decision, _ bool) {
	if s.onDecision != nil {
		s.onDecision(sec-epochSec, dec)
	}
	if s.rev.ScaleToZeroPolicy == config.ScaleToZeroLearned {
		s.res.Learned.count(dec)
	}
	s.atZero = dec.AtZero
}

// epochSec is the unix second of the trace's start (scenario.Epoch).
var epochSec = scenario.Epoch.Unix()

// Final is the recording's business live; nothing is recorded here.
func (s *sim) Final(int64, decider.Second) {}

// Apply is pkg/autoscaler apply: routing and replica count, when they
// differ from what was last applied, and parking: a parked replica's idle
// time is parked time (Result.ParkedReplicaSeconds).
func (s *sim) Apply(dec *decider.Decision) bool {
	a := &s.applied
	if !a.known || a.activator != dec.ActivatorInPath {
		a.activator = dec.ActivatorInPath
	}
	if !a.known || a.replicas != dec.Desired {
		s.scaleTo(dec.Desired)
		a.replicas = dec.Desired
	}
	if dec.Parked != s.parked {
		s.advance(s.now) // the idle time so far is of the state before
		s.parked, s.woken = dec.Parked, false
	}
	a.known = true
	return true
}
