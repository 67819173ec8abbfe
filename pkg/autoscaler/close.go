package autoscaler

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/decider"
	"ebb.dev/ebb/pkg/scaling/secondloop"
	"ebb.dev/ebb/pkg/stats"
)

// second closes the given unix second: reads ready pods, scrapes a sample of
// them, takes the activator reports, and steps the decider (also through any
// seconds missed since the last step, as gaps). It is the revision's whole
// work of a second; the time it runs at is the schedule's business (a
// worker at the revision's phase, or a poke at once).
func (r *revision) second(ctx context.Context, sec int64) {
	if r.loop.Stepper != nil && sec <= r.loop.Last {
		return // a poke closed it already
	}
	sc := scratchPool.Get().(*scratch)
	defer sc.release()
	if ps, ok := r.deps.platform.(podStater); ok && r.cfg.rev.Class == config.ClassHPA {
		r.secondOfStates(ctx, sec, ps, sc)
		return
	}
	pods, err := r.deps.platform.ReadyPods(ctx, r.key)
	if err != nil {
		r.log().Warn("listing ready pods failed; no decision this second", zap.Error(err))
		return
	}
	c := &sc.closing
	*c = secondloop.Closing{Sec: sec, Ready: r.usable(len(pods))}
	if r.cfg.rev.Class == config.ClassHPA {
		c.PerPod, c.Direct, c.Pods = true, r.scrapeEach(ctx, pods, sc), sc.samples
	} else {
		c.Scraped, c.Concurrency, c.RPS = r.scrape(ctx, pods, sec, sc)
	}
	r.close(ctx, sc)
}

// usable is the ready count the decider sees of ready pods: none while
// the platform says the revision's pods keep failing (StartFailureReporter,
// a failure that is not Pending). A crash loop's replica, ready for a
// moment between two crashes, neither makes the revision active nor takes
// the activator out of its path: its state stays activating, the
// activator holds its requests. The platform clears the failure once a
// pod has recovered.
func (r *revision) usable(ready int) int32 {
	if ready == 0 {
		return 0
	}
	if fr, ok := r.deps.platform.(StartFailureReporter); ok {
		if f, failing := fr.Failure(r.key); failing && !f.Pending {
			return 0
		}
	}
	return int32(ready)
}

// close takes the activator reports into sc.closing and closes its second.
func (r *revision) close(ctx context.Context, sc *scratch) {
	c := &sc.closing
	sc.reports, sc.late = r.takeReports(c.Sec, sc.reports, sc.late)
	c.Reports, c.Late = sc.reports, sc.late
	r.step(ctx, c)
}

// scrapeEach scrapes every ready pod for the HPA class, which needs each
// pod's value (Kubernetes reads all pods, not a sample); a pod that does
// not answer has no sample that second (the HPA's missing-pod rules). The
// samples are left in sc.samples.
func (r *revision) scrapeEach(ctx context.Context, pods []Pod, sc *scratch) [2]float64 {
	sctx := sc.scrapeCtx(ctx, r.deps.scrapeTimeout)
	rm := r.metrics.Load()
	began := rm.now(r.deps.clock)
	direct, err := scrapePods(sctx, r.deps.scraper, pods, sc)
	rm.scraped(r.deps.clock, began, err)
	return direct
}

func (r *revision) scrape(ctx context.Context, pods []Pod, sec int64, sc *scratch) (ok bool, conc, rps float64) {
	if len(pods) == 0 || r.cfg.rev.TargetBurstCapacity == -1 {
		return false, 0, 0 // nothing to scrape (Knative: no scrape target with TBC -1)
	}
	r.scrapeNo++
	sample := pickSample(pods, time.Unix(sec, 0), r.cfg.rev.StableWindow, int(r.scrapeNo))
	sctx := sc.scrapeCtx(ctx, r.deps.scrapeTimeout)
	rm := r.metrics.Load()
	began := rm.now(r.deps.clock)
	conc, rps, err := scrapeAll(sctx, r.deps.scraper, sample, len(pods), sc)
	rm.scraped(r.deps.clock, began, err)
	if err != nil {
		if ce := r.deps.log.Check(zap.DebugLevel, "scrape failed; nothing recorded from pods this second"); ce != nil {
			ce.Write(zap.Stringer("revision", r.key), zap.Error(err))
		}
		return false, 0, 0
	}
	return true, conc, rps
}

// scratch is the memory one close of a second works in, lent by
// scratchPool: a revision keeps none of it between seconds, and the
// decider and the recording copy what they keep.
type scratch struct {
	closing secondloop.Closing
	reports []stats.Stat      // activator reports
	late    []secondloop.Late // late activator reports
	stats   []stats.Stat      // scraped pods
	errs    []error
	values  [][2]float64        // per-pod concurrency and rps the samples point to
	samples []decider.PodSample // the scraped pods'
	all     []decider.PodSample // every pod of a PodStater's list
	pods    []Pod
	index   []int
	// The scrapes' deadline context, kept across the closes the scratch
	// serves (see scrapeCtx).
	ctx      context.Context
	parent   <-chan struct{} // the Done of the context ctx derives from
	deadline time.Time
	cancel   context.CancelFunc
}

// scrapeSlack is how much shorter than the scrape timeout a close's
// scrapes may be given: the closes a scratch serves within scrapeSlack of
// each other share one deadline context (one timer) instead of one each.
const scrapeSlack = 50 * time.Millisecond

// scrapeCtx returns a context that ends when parent does and within
// timeout, and not before timeout - scrapeSlack. It may be one derived
// from an earlier parent with the same Done (the worker's context; the
// scrapes read no values). It is wall time: it bounds I/O.
func (sc *scratch) scrapeCtx(parent context.Context, timeout time.Duration) context.Context {
	now := time.Now()
	done := parent.Done()
	if sc.ctx != nil && done != nil && sc.parent == done && sc.deadline.Sub(now) >= timeout-scrapeSlack && sc.ctx.Err() == nil {
		return sc.ctx
	}
	if sc.cancel != nil {
		sc.cancel()
	}
	sc.parent, sc.deadline = done, now.Add(timeout)
	sc.ctx, sc.cancel = context.WithDeadline(parent, sc.deadline)
	return sc.ctx
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// release clears what points elsewhere (so the pool keeps nothing alive)
// and returns sc to the pool.
func (sc *scratch) release() {
	clear(sc.reports)
	clear(sc.late)
	sc.closing = secondloop.Closing{}
	clear(sc.stats)
	clear(sc.errs)
	clear(sc.samples)
	clear(sc.all)
	clear(sc.pods)
	sc.reports, sc.late, sc.stats, sc.errs = sc.reports[:0], sc.late[:0], sc.stats[:0], sc.errs[:0]
	sc.samples, sc.all, sc.pods, sc.index, sc.values = sc.samples[:0], sc.all[:0], sc.pods[:0], sc.index[:0], sc.values[:0]
	scratchPool.Put(sc)
}

// grow returns s resized to n, its elements zero.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}
