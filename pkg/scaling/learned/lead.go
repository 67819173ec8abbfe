package learned

import (
	"time"

	"ebb.dev/ebb/pkg/config"
)

// The pre-warm lead. A replica the policy starts for a second of idle time
// must be ready by then: the policy decides on ticks only, so it starts
// one a lead ahead, and the lead must cover a tick and the replica's
// start-up. With prewarm-lead "auto" (config.PrewarmLeadAuto, the
// default) the policy measures the start-ups itself: from the second it
// asked for a replica while none was ready to the first second it saw one
// ready (the second that closed after it became ready, so the measure
// errs long, never short), and its lead is a tick plus the longest of the
// latest startupsKept start-ups. Until it has seen one, the lead is
// unseenLead. A revision whose replicas start in a second (whatif's
// --cold-start 1s) gets a lead of 3s with the default 2s tick; one on a
// cluster whose pods take 8s to become ready gets 10s.

const (
	// startupsKept is how many of the latest start-ups the lead covers.
	startupsKept = 4
	// unseenLead is the lead in seconds before any start-up was seen.
	unseenLead = 10
	// maxStartup bounds a start-up measure, in seconds (a byte).
	maxStartup = 255
)

// startups are the replica start-ups the policy measured.
type startups struct {
	// seen holds the latest start-ups in seconds (1 to maxStartup), a ring
	// of n of them from at.
	seen  [startupsKept]uint8
	at, n uint8
	// asked is set while a replica the policy asked for with none ready is
	// starting; since is the second it asked.
	asked bool
	since int64
}

// longest is the longest start-up kept, 0 before any.
func (s *startups) longest() int64 {
	m := uint8(0)
	for i := range int(s.n) {
		m = max(m, s.seen[(int(s.at)+i)%startupsKept])
	}
	return int64(m)
}

// add records a start-up of d seconds (at least 1: a replica is seen
// ready at the earliest in the second after the one it was asked for).
func (s *startups) add(d int64) {
	v := uint8(min(max(d, 1), maxStartup))
	s.seen[(int(s.at)+int(s.n))%startupsKept] = v
	if s.n < startupsKept {
		s.n++
	} else {
		s.at = uint8((int(s.at) + 1) % startupsKept)
	}
}

// decided takes the decision of second sec: a replica asked for while
// none is ready starts a measure; none asked for ends it unmeasured.
func (s *startups) decided(sec int64, ready, desired int32) {
	switch {
	case desired == 0:
		s.asked = false
	case ready == 0 && !s.asked:
		s.asked, s.since = true, sec
	}
}

// ready takes the ready replicas of second sec; it reports whether a
// start-up was measured.
func (s *startups) ready(sec int64, ready int32) bool {
	if !s.asked || ready == 0 {
		return false
	}
	s.asked = false
	s.add(sec - s.since)
	return true
}

// newLead returns the lead in seconds of a revision: its prewarm-lead, or
// -1 when the policy learns it.
func newLead(rev *config.Revision) int64 {
	if rev.PrewarmLead == config.PrewarmLeadAuto {
		return -1
	}
	return int64(rev.PrewarmLead / time.Second)
}

// Lead is the policy's lead in seconds: the revision's prewarm-lead,
// or a tick plus the longest start-up seen (unseenLead before any).
func (p *Policy) Lead() int64 {
	switch {
	case p.lead >= 0:
		return p.lead
	case p.starts.n == 0:
		return unseenLead
	}
	return p.tick + p.starts.longest()
}

// ObserveReady takes the ready replica count of second now, for the
// policy's measure of start-ups (the decider's Stepper calls it every
// second).
func (p *Policy) ObserveReady(now time.Time, ready int32) {
	if p.lead < 0 {
		before := p.starts.longest()
		if p.starts.ready(now.Unix(), ready) && p.starts.longest() != before {
			p.generation++ // the state worth saving changed
		}
	}
}
