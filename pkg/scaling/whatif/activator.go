package whatif

import "ebb.dev/ebb/pkg/stats"

// arrive takes one request arriving at t. Without a ready replica it is a
// cold start: the activator holds it and pokes the autoscaler (at most once
// per report period). With the activator in the path, or no replica with
// room, the activator counts it (and holds it until a replica has room);
// otherwise it goes straight to a replica.
func (s *sim) arrive(t int64) {
	s.res.Requests++
	if s.nReady == 0 {
		s.res.ColdStarts++
		s.act.In(at(t), stats.Direct)
		s.queue = append(s.queue, t)
		s.poke(t)
		return
	}
	r := s.pick()
	if s.applied.activator || r == nil {
		s.act.In(at(t), stats.Direct)
		if r == nil {
			s.queue = append(s.queue, t)
			return
		}
		wake := s.wake()
		s.res.wait(wake)
		s.start(r, t, wake, stats.ViaActivator)
		return
	}
	s.res.wait(0)
	s.start(r, t, 0, stats.Direct)
}

// poke is the activator's poke of a revision with no replica (pkg/activator
// admit.go poke): one request's worth of load, at most once per report
// period, taken off the next report's count. The autoscaler closes the
// current second at once when the revision is at zero.
func (s *sim) poke(t int64) {
	if t-s.lastPoke < reportPeriod {
		return
	}
	s.lastPoke = t
	s.pokes++
	s.report(stats.Stat{Source: stats.SourceActivator, PodName: activatorPod, Time: at(t),
		AverageConcurrency: 1, RequestCount: 1})
	s.onPoke(t)
}

// activatorReport is the activator's report loop at t (pkg/activator
// report.go): the window's concurrency and arrivals less the pokes, sent
// only when the window saw anything.
func (s *sim) activatorReport(t int64) {
	snap := s.act.Report(at(t))
	pokes := s.pokes
	s.pokes = 0
	if snap.RequestCount == 0 && snap.InFlight == 0 && snap.AverageConcurrency == 0 {
		return
	}
	s.report(stats.Stat{Source: stats.SourceActivator, PodName: activatorPod, Time: at(t), Period: snap.Period,
		AverageConcurrency: snap.AverageConcurrency, RequestCount: snap.RequestCount - min(pokes, snap.RequestCount)})
}

// replicaReports cuts every ready replica's queue-proxy report at t
// (pkg/queueproxy report.go), which the autoscaler's scrape then reads.
func (s *sim) replicaReports(t int64) {
	for _, r := range s.replicas {
		if !r.ready {
			continue
		}
		snap := r.acct.Report(at(t))
		r.report = stats.Stat{Source: stats.SourceQueueProxy, Period: snap.Period,
			AverageConcurrency: snap.AverageConcurrency, AverageProxiedConcurrency: snap.AverageProxiedConcurrency,
			RequestCount: snap.RequestCount, ProxiedRequestCount: snap.ProxiedRequestCount}
	}
}

// wake is what a request forwarded now waits for a parked replica: the
// first since it was parked pays Options.ParkedWake (and counts a wake
// from parked); the others find it waking or awake.
func (s *sim) wake() int64 {
	if !s.parked || s.woken {
		return 0
	}
	s.woken = true
	s.res.WakesFromParked++
	return s.parkedWake
}
