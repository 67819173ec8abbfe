package whatif

import (
	"slices"

	"ebb.dev/ebb/pkg/stats"
)

// completeUntil ends the requests that finish at or before t, in order.
func (s *sim) completeUntil(t int64) {
	for s.done.Len() > 0 && s.done.min().at <= t {
		c := s.done.pop()
		s.advance(c.at)
		now := at(c.at)
		c.rep.acct.Out(now, c.via)
		if c.via == stats.ViaActivator {
			s.act.Out(now, stats.Direct)
		}
		c.rep.inFlight--
		switch {
		case c.rep.draining && c.rep.inFlight == 0:
			s.end(c.rep)
		case c.rep.ready && c.rep.inFlight == 0:
			s.idle++
		}
		if s.rev.ContainerConcurrency > 0 && c.rep.ready {
			s.dispatch(c.at)
		}
	}
}

// becomeReady makes the replicas whose cold start is over at t ready, and
// hands them the requests the activator holds.
func (s *sim) becomeReady(t int64) {
	changed := false
	for _, r := range s.replicas {
		if r.ready || r.draining || r.readyAt > t {
			continue
		}
		s.advance(t)
		r.ready, r.acct = true, stats.NewAccounting(at(t))
		if s.nReady == 0 {
			s.res.ScaleFromZero++
		}
		s.nReady++
		s.idle++
		changed = true
	}
	if changed {
		s.dispatch(t)
	}
}

// scaleTo sets the replica count at s.now: new replicas start (ready a
// cold start later); removed ones are the starting ones first (newest
// first), then the ready ones with the fewest requests in flight (newest
// first among equals), which drain their requests.
func (s *sim) scaleTo(n int32) {
	cur := 0
	for _, r := range s.replicas {
		if !r.draining {
			cur++
		}
	}
	s.advance(s.now)
	for ; int32(cur) < n; cur++ {
		s.replicas = append(s.replicas, &replica{readyAt: s.now + s.cold})
		s.existing++
		s.res.ReplicaStarts++
		s.res.PeakReplicas = max(s.res.PeakReplicas, int64(s.existing))
	}
	for ; int32(cur) > n; cur-- {
		s.remove(s.victim())
	}
	if s.cold == 0 {
		s.becomeReady(s.now)
	}
}

// victim is the replica a scale-down removes.
func (s *sim) victim() *replica {
	var best *replica
	for i := len(s.replicas) - 1; i >= 0; i-- {
		r := s.replicas[i]
		switch {
		case r.draining:
		case !r.ready:
			return r
		case best == nil || r.inFlight < best.inFlight:
			best = r
		}
	}
	return best
}

func (s *sim) remove(r *replica) {
	if !r.ready {
		s.end(r)
		return
	}
	r.ready = false
	s.nReady--
	if r.inFlight == 0 {
		s.idle--
		s.end(r)
		return
	}
	r.draining = true
}

// end drops a replica that no longer exists.
func (s *sim) end(r *replica) {
	s.replicas = slices.DeleteFunc(s.replicas, func(x *replica) bool { return x == r })
	s.existing--
}

// pick is the ready replica a request goes to: one with room (under
// containerConcurrency, when set) and the fewest requests in flight, the
// oldest among equals; nil when none has room.
func (s *sim) pick() *replica {
	var best *replica
	cc := int64(s.rev.ContainerConcurrency)
	for _, r := range s.replicas {
		if !r.ready || (cc > 0 && r.inFlight >= cc) {
			continue
		}
		if best == nil || r.inFlight < best.inFlight {
			best = r
		}
	}
	return best
}

// dispatch hands the activator's held requests, oldest first, to ready
// replicas with room.
func (s *sim) dispatch(t int64) {
	for s.queueAt < len(s.queue) {
		r := s.pick()
		if r == nil {
			return
		}
		arrived := s.queue[s.queueAt]
		s.queueAt++
		s.res.wait(t - arrived)
		s.start(r, t, 0, stats.ViaActivator)
	}
	s.queue, s.queueAt = s.queue[:0], 0
}

// start runs a request on r from t, after delay (a parked replica's wake).
func (s *sim) start(r *replica, t, delay int64, via stats.Arrival) {
	s.advance(t)
	if r.inFlight == 0 {
		s.idle--
	}
	r.inFlight++
	r.acct.In(at(t), via)
	s.done.push(completion{at: t + delay + s.dur, rep: r, via: via})
}
