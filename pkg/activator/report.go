package activator

import (
	"context"
	"math"
	"time"

	"ebb.dev/ebb/pkg/stats"
)

// reportLoop cuts the per-revision load reports every ReportPeriod until
// ctx ends, and once more then, so the last window is not lost.
func (a *Activator) reportLoop(ctx context.Context) {
	t := a.clock.NewTicker(a.opts.ReportPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			a.report(a.clock.Now())
			return
		case now := <-t.C():
			a.report(now)
		}
	}
}

// report sends one Stat per revision that saw traffic since the last
// report: its time-weighted concurrency (queued requests included) and
// arrivals. The pokes of the period were already counted as one request
// each, so they are taken off, as Knative does.
func (a *Activator) report(now time.Time) {
	var batch []stats.Stat
	for key, rev := range a.routes.Load().byKey {
		s := rev.acct.Report(now)
		pokes := rev.pokes.Swap(0)
		rev.m.concurrency.Store(math.Float64bits(s.AverageConcurrency))
		if s.RequestCount == 0 && s.InFlight == 0 && s.AverageConcurrency == 0 {
			continue
		}
		batch = append(batch, stats.Stat{
			Source:             stats.SourceActivator,
			PodName:            a.opts.PodName,
			Revision:           key,
			Time:               now,
			Period:             s.Period,
			ProcessUptime:      now.Sub(a.started),
			AverageConcurrency: s.AverageConcurrency,
			RequestCount:       s.RequestCount - min(pokes, s.RequestCount),
		})
	}
	if len(batch) > 0 {
		a.stats.Report(batch)
	}
}
