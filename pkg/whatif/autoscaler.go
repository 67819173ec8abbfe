package whatif

import (
	"time"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/decider"
	"ebb.dev/ebb/pkg/stats"
)

// report is the autoscaler taking an activator report (pkg/autoscaler
// revision.report): stats.Pending keeps the newer window and the poke with
// the most load, and load while the recommendation is 0 pokes the
// revision.
func (s *sim) report(st stats.Stat) {
	s.pending.Add(st)
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
// the KPA class): the ready pods, their scraped totals and the pending
// activator reports make the decider's second; a second a poke closed
// already is not closed again.
func (s *sim) closeSecond(sec int64) {
	if s.stepper != nil && sec <= s.last {
		return
	}
	ready := int32(s.nReady)
	scraped, conc, rps := s.scrape()
	reports, _ := s.pending.Take(s.reports[:0]) // one activator: nothing is dropped
	s.step(sec, decider.SecondOf(&ready, scraped, conc, rps, reports))
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

// step is pkg/autoscaler step: the stepper starts at the first second,
// missed seconds are gaps, and a decision is applied.
func (s *sim) step(sec int64, in decider.Second) {
	if s.stepper == nil {
		s.stepper = decider.NewStepper(s.rev, decider.StepperOptions{First: at(sec * int64(time.Second)), Ready: *in.Ready})
		s.stepper.Decider().UsePredictor(s.predictor)
		s.last = sec - 1
	}
	for g := s.last + 1; g < sec; g++ {
		s.stepOne(g, decider.Second{})
	}
	s.stepOne(sec, in)
}

func (s *sim) stepOne(sec int64, in decider.Second) {
	s.last = sec
	if !s.stepper.StepInto(at(sec*int64(time.Second)), in, &s.dec) {
		return
	}
	if s.onDecision != nil {
		s.onDecision(sec, &s.dec)
	}
	if s.rev.ScaleToZeroPolicy == config.ScaleToZeroLearned {
		s.res.Learned.count(&s.dec)
	}
	s.atZero = s.dec.AtZero
	s.apply(&s.dec)
}

// apply is pkg/autoscaler apply: routing and replica count, when they
// differ from what was last applied.
func (s *sim) apply(dec *decider.Decision) {
	a := &s.applied
	if !a.known || a.activator != dec.ActivatorInPath {
		a.activator = dec.ActivatorInPath
	}
	if !a.known || a.replicas != dec.Desired {
		s.scaleTo(dec.Desired)
		a.replicas = dec.Desired
	}
	a.known = true
}
