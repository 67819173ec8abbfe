package queueproxy

import (
	"context"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/stats"
)

// reportPeriod is how often a Stat is cut (Knative's reportingPeriod).
const reportPeriod = time.Second

// reporter cuts a Stat from the Accounting every period and keeps the latest
// one encoded for the stats endpoint. Run's goroutine is the only writer;
// readers load an immutable snapshot.
type reporter struct {
	acct     *stats.Accounting
	pod      string
	revision string
	started  time.Time
	metrics  *metrics
	log      *zap.Logger

	latest atomic.Pointer[[]byte] // encoded stats.Stat; never mutated once stored
}

func newReporter(acct *stats.Accounting, c Config, started time.Time, m *metrics, log *zap.Logger) *reporter {
	r := &reporter{acct: acct, pod: c.PodName, revision: c.Revision, started: started, metrics: m, log: log}
	// Before the first report, scrapes get an empty stat with only the pod
	// name, as Knative's.
	r.store(stats.Stat{Source: stats.SourceQueueProxy, PodName: c.PodName, Revision: c.Revision})
	return r
}

// run reports every period until ctx ends.
func (r *reporter) run(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			r.report(now)
		}
	}
}

// report cuts the window ending at now.
func (r *reporter) report(now time.Time) stats.Stat {
	snap := r.acct.Report(now)
	s := stats.Stat{
		Source:                    stats.SourceQueueProxy,
		PodName:                   r.pod,
		Revision:                  r.revision,
		Time:                      now,
		Period:                    snap.Period,
		ProcessUptime:             now.Sub(r.started),
		AverageConcurrency:        snap.AverageConcurrency,
		AverageProxiedConcurrency: snap.AverageProxiedConcurrency,
		RequestCount:              snap.RequestCount,
		ProxiedRequestCount:       snap.ProxiedRequestCount,
	}
	r.store(s)
	r.metrics.report(s, snap.InFlight)
	r.log.Debug("report", zap.Float64("concurrency", s.AverageConcurrency),
		zap.Float64("proxied_concurrency", s.AverageProxiedConcurrency),
		zap.Uint64("requests", s.RequestCount), zap.Uint64("proxied_requests", s.ProxiedRequestCount),
		zap.Int64("in_flight", snap.InFlight))
	return s
}

func (r *reporter) store(s stats.Stat) {
	b, err := s.MarshalBinary()
	if err != nil { // the Accounting's invariants make this unreachable
		r.log.Error("stat does not encode", zap.Error(err))
		return
	}
	r.latest.Store(&b)
}

// Latest returns the latest encoded Stat; callers must not modify it.
func (r *reporter) Latest() []byte { return *r.latest.Load() }
