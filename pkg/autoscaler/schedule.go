package autoscaler

import (
	"sync"
	"time"
)

// phases is how many phases a second is cut into. A revision closes each
// of its seconds at its own phase (the end of the second plus phase ×
// phaseStep), so the revisions' work spreads over the second instead of
// queueing behind its start; every revision still closes every second,
// and its decider still decides every tick-interval: the phase moves when
// a second is read, not which second it is.
const (
	phases    = 100
	phaseStep = time.Second / phases
)

// restCheck is how often, at most, a resting revision reads its ready
// pods: pods that someone else started while it rested (kubectl scale)
// wake it. Its decider would scale them away as it does at every tick; a
// resting revision does it up to restCheck later. Each revision checks
// after a part of restCheck of its own (restCheckAfter), so that a
// population that went to rest together does not check together.
const restCheck = 30 * time.Second

// keyHash is the hash of a revision's key its phase and its rest checks
// derive from: the same in every process, so that a revision keeps them
// across restarts and when it moves to another replica.
// It is FNV-1a (hash/fnv's New32a over namespace, '/', name), computed
// over the strings in place (no hash.Hash, no byte slices).
func keyHash(key RevisionKey) uint32 {
	const prime = 16777619
	h := uint32(2166136261)
	for i := 0; i < len(key.Namespace); i++ {
		h = (h ^ uint32(key.Namespace[i])) * prime
	}
	h = (h ^ '/') * prime
	for i := 0; i < len(key.Name); i++ {
		h = (h ^ uint32(key.Name[i])) * prime
	}
	return h
}

// phaseOf is a revision's phase.
func phaseOf(hash uint32) uint8 { return uint8(hash % phases) }

// decisionDue is when a revision's decision of second at was due on its
// schedule: the end of the second plus the revision's phase. Now minus it
// is the decision's tick-to-decision latency (a poke decides sooner).
func decisionDue(key RevisionKey, at time.Time) time.Time {
	return time.Unix(at.Unix()+1, 0).Add(time.Duration(phaseOf(keyHash(key))) * phaseStep)
}

// tickOrigin is the second a revision's decider counts its ticks from when
// it starts at second first: the last second at or before first whose
// remainder by the tick interval is the revision's own (a part of its
// hash). Revisions that start together decide on different seconds, every
// tick interval each, instead of all on the same ones.
func tickOrigin(hash uint32, first int64, tick time.Duration) int64 {
	n := max(int64(tick/time.Second), 1)
	own := int64(hash/(phases*256)) % n
	return first - ((first-own)%n+n)%n
}

// restCheckAfter is the time between a resting revision's checks: from
// half of restCheck to all of it, by its hash.
func restCheckAfter(hash uint32) time.Duration {
	part := (hash / phases) % 256
	return restCheck/2 + restCheck/2*time.Duration(part)/255
}

// slotOf is the index of a phase boundary: the unix second it falls in
// times phases, plus its phase.
func slotOf(t time.Time) int64 {
	return t.Unix()*phases + int64(t.Nanosecond())/int64(phaseStep)
}

// slotTime is the time of phase boundary i.
func slotTime(i int64) time.Time {
	sec, ph := i/phases, i%phases
	return time.Unix(sec, int64(ph)*int64(phaseStep))
}

// schedule knows which revisions close their seconds (ticking, by phase)
// and which rest until a phase boundary (sleepers). It is a pure
// structure: the dispatcher passes the time in (due), and the revisions'
// owners move them between the two (tick, sleep, remove).
type schedule struct {
	mu sync.Mutex // guards everything below and every revision's sched
	// ticking holds the revisions that close every second, by phase.
	ticking [phases][]*revision
	// sleepers holds the resting revisions by the phase boundary at which
	// they check their pods (or wake for a pre-warm). An entry is stale
	// when the revision woke or went to sleep again since (its
	// sched.until differs): it is dropped when its boundary comes.
	sleepers map[int64][]*revision
	// next is the next phase boundary due, and work what due hands out;
	// owned by the dispatcher.
	next int64
	work dueWork
}

// schedSlot is where a revision is in the schedule; guarded by schedule.mu.
type schedSlot struct {
	index int   // in ticking[phase]; -1 when not ticking
	until int64 // the boundary it sleeps until; 0 when awake
}

func newSchedule() *schedule {
	return &schedule{sleepers: map[int64][]*revision{}}
}

// tick makes r close its seconds at its phase (waking it if it slept).
func (s *schedule) tick(r *revision) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.sched.until = 0
	if r.sched.index >= 0 {
		return
	}
	r.sched.index = len(s.ticking[r.phase])
	s.ticking[r.phase] = append(s.ticking[r.phase], r)
}

// sleep takes r off the ticking revisions until the phase boundary at
// or after wake that is its phase.
func (s *schedule) sleep(r *revision, wake time.Time) {
	at := slotOf(wake)
	at += (int64(r.phase) - at%phases + phases) % phases
	s.mu.Lock()
	defer s.mu.Unlock()
	s.untickLocked(r)
	r.sched.until = at
	s.sleepers[at] = append(s.sleepers[at], r)
}

// remove takes r out of the schedule for good.
func (s *schedule) remove(r *revision) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.untickLocked(r)
	r.sched.until = 0
}

func (s *schedule) untickLocked(r *revision) {
	i := r.sched.index
	if i < 0 {
		return
	}
	list := s.ticking[r.phase]
	last := len(list) - 1
	list[i] = list[last]
	list[i].sched.index = i
	list[last] = nil
	s.ticking[r.phase] = list[:last]
	r.sched.index = -1
}

// appendTicking appends the revisions that close their seconds (the
// awake ones) to dst: as many as are awake, whatever the number at rest.
func (s *schedule) appendTicking(dst []*revision) []*revision {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.ticking {
		dst = append(dst, l...)
	}
	return dst
}

// ticks counts the revisions that close their seconds.
func (s *schedule) ticks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, l := range s.ticking {
		n += len(l)
	}
	return n
}

// dueWork is what one phase boundary asks of the revisions: close the
// second that just ended (closing), or check the pods of a sleeper
// (checking).
type dueWork struct {
	at       time.Time // the boundary
	sec      int64     // the second the closing revisions close
	closing  []*revision
	checking []*revision
}

// due returns the work of every phase boundary up to now not yet
// returned, one boundary after the other, into fn. It starts with the
// first boundary after now: a revision closes its first second at its
// phase, within a second (a poke before that closes it at once). After a
// stall (the process did not run for a while) it skips to the last
// second: each revision closes that one, and steps the ones it missed as
// gaps. The revision lists passed to fn are reused after fn returns.
func (s *schedule) due(now time.Time, fn func(*dueWork)) {
	end := slotOf(now)
	switch {
	case s.next == 0: // the start
		s.next = end + 1
	case end-s.next > phases: // a stall
		s.next = end - phases + 1
	case end < s.next-phases: // the wall clock went back: go on from now
		s.next = end
	}
	w := &s.work
	for ; s.next <= end; s.next++ {
		w.at, w.sec = slotTime(s.next), s.next/phases-1
		w.closing, w.checking = w.closing[:0], w.checking[:0]
		s.mu.Lock()
		w.closing = append(w.closing, s.ticking[s.next%phases]...)
		for _, r := range s.sleepers[s.next] {
			if r.sched.until == s.next {
				w.checking = append(w.checking, r)
			}
		}
		delete(s.sleepers, s.next)
		s.mu.Unlock()
		fn(w)
	}
	clear(w.closing[:cap(w.closing)]) // keep no revision alive
	clear(w.checking[:cap(w.checking)])
}

// nextAt is the time of the next phase boundary due.
func (s *schedule) nextAt() time.Time { return slotTime(s.next) }

// wait is how long the dispatcher sleeps at now before the next boundary:
// never more than a phase, so that a wall clock set back does not stop it.
func (s *schedule) wait(now time.Time) time.Duration {
	return min(max(s.nextAt().Sub(now), 0), phaseStep)
}
