package autoscaler

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/decider"
	"ebb.dev/ebb/pkg/stats"
)

// maxPendingReporters bounds the activator pods whose reports are held for
// one second of one revision (stats.Pending.Max); reports of more pods are
// dropped (and counted) rather than held without limit.
const maxPendingReporters = 256

// revisionConfig is one validated configuration of a revision.
type revisionConfig struct {
	rev         *config.Revision
	configData  map[string]string // the ConfigMap data it came from (for recordings)
	annotations map[string]string
}

// revision is the runtime of one revision. Its goroutine (run) owns every
// field not marked otherwise.
type revision struct {
	key  RevisionKey
	deps *deps
	log  *zap.Logger

	cfg        revisionConfig
	stepper    *decider.Stepper // nil until the first second
	last       int64            // last unix second stepped
	applied    appliedState
	rec        *recording
	recSeq     int
	scrapeNo   int
	metrics    *revisionMetrics // nil without metrics
	metricName string           // the metric label of metrics
	warnings   warnings         // the HPA class's last metric warning
	carry      []byte           // the learned state of the decider a configuration change ended
	savedGen   uint64           // the learned state's generation last offered to the saver

	// Written by other goroutines.
	mu       sync.Mutex          // guards pending
	pending  stats.Pending       // the activator reports for the next second
	poke     chan struct{}       // buffered 1: an activator saw traffic at zero
	updates  chan revisionConfig // buffered 1: the newest config
	atZero   atomic.Bool         // recommendation is exactly 0 (read by Ingest)
	history  *history
	head     atomic.Pointer[statusHead]
	stopped  chan struct{} // closed when run returns
	quit     chan struct{} // closed by stop
	job      secondJob     // handed to a worker by run, which waits for it
	stopOnce sync.Once
}

// appliedState is what was last applied through the platform.
type appliedState struct {
	known     bool
	replicas  int32
	activator bool
}

func newRevision(key RevisionKey, cfg revisionConfig, d *deps) *revision {
	r := &revision{
		key: key, deps: d, cfg: cfg,
		log:     d.log.With(zap.String("revision", key.String())),
		poke:    make(chan struct{}, 1),
		pending: stats.Pending{Max: maxPendingReporters},
		updates: make(chan revisionConfig, 1),
		history: newHistory(d.historySize),
		stopped: make(chan struct{}),
		quit:    make(chan struct{}),
	}
	r.job = secondJob{r: r, done: make(chan struct{})}
	return r
}

// secondJob is a revision's second, run by a worker of the pool.
type secondJob struct {
	r    *revision
	ctx  context.Context
	sec  int64
	done chan struct{} // a token per finished job
}

// report queues an activator report for the current second (the rule of
// stats.Pending: a pod's newer window replaces its older one, and of its
// pokes the one with the most load is kept) and pokes the revision when
// traffic arrives at zero. Safe for concurrent use.
func (r *revision) report(st stats.Stat) {
	r.mu.Lock()
	r.pending.Add(st)
	r.mu.Unlock()
	if st.AverageConcurrency > 0 && r.atZero.Load() {
		select {
		case r.poke <- struct{}{}:
		default:
		}
	}
}

// update hands a new configuration to the revision's goroutine; a newer one
// replaces one not yet taken.
func (r *revision) update(cfg revisionConfig) {
	for {
		select {
		case r.updates <- cfg:
			return
		default:
		}
		select {
		case <-r.updates:
		default:
		}
	}
}

// takePending returns the pending reports in stats.Pending's fixed order.
func (r *revision) takePending() []stats.Stat {
	r.mu.Lock()
	p, dropped := r.pending.Take(nil)
	r.mu.Unlock()
	if dropped > 0 {
		r.log.Warn("activator reports dropped", zap.Int("count", dropped))
	}
	return p
}

// run is the revision's loop: one step per second, at once on a poke. The
// goroutine owns the revision; it lends it to a worker of the pool for the
// step itself and waits, so that 10,000 idle revisions hold shallow stacks
// and only the pool's few workers hold deep ones.
func (r *revision) run(ctx context.Context) {
	defer close(r.stopped)
	defer r.closeRecording()
	for {
		now := r.deps.clock.Now()
		next := now.Truncate(time.Second).Add(time.Second)
		select {
		case <-ctx.Done():
			return
		case <-r.quit:
			return
		case <-r.deps.clock.After(next.Sub(now)):
			r.onWorker(ctx, next.Unix()-1)
		case <-r.poke:
			r.onWorker(ctx, r.deps.clock.Now().Unix())
		case cfg := <-r.updates:
			r.reconfigure(cfg)
		}
	}
}

// onWorker runs second on a worker of the pool and waits for it.
func (r *revision) onWorker(ctx context.Context, sec int64) {
	r.job.ctx, r.job.sec = ctx, sec
	select {
	case r.deps.work <- &r.job:
	case <-ctx.Done():
		return
	}
	<-r.job.done
}

// second closes the given unix second: reads ready pods, scrapes a sample of
// them, takes the activator reports, and steps the decider (also through any
// seconds missed since the last step, as gaps).
func (r *revision) second(ctx context.Context, sec int64) {
	if r.stepper != nil && sec <= r.last {
		return // a poke closed it already
	}
	if ps, ok := r.deps.platform.(PodStater); ok && r.cfg.rev.Class == config.ClassHPA {
		r.secondOfStates(ctx, sec, ps)
		return
	}
	pods, err := r.deps.platform.ReadyPods(ctx, r.key)
	if err != nil {
		r.log.Warn("listing ready pods failed; no decision this second", zap.Error(err))
		return
	}
	ready := int32(len(pods))
	if r.cfg.rev.Class == config.ClassHPA {
		samples, direct := r.scrapeEach(ctx, pods)
		in := secondOfPods(samples, direct, r.takePending())
		in.Ready = &ready
		r.step(ctx, sec, in)
		return
	}
	scraped, conc, rps := r.scrape(ctx, pods, sec)
	in := decider.SecondOf(ready, scraped, conc, rps, r.takePending())
	r.step(ctx, sec, in)
}

// scrapeEach scrapes every ready pod for the HPA class, which needs each
// pod's value (Kubernetes reads all pods, not a sample); a pod that does
// not answer has no sample that second (the HPA's missing-pod rules).
func (r *revision) scrapeEach(ctx context.Context, pods []Pod) ([]decider.PodSample, [2]float64) {
	sctx, cancel := context.WithTimeout(ctx, r.deps.scrapeTimeout)
	defer cancel()
	began := r.deps.clock.Now()
	samples, direct, err := scrapePods(sctx, r.deps.scraper, pods)
	r.metrics.scraped(r.deps.clock.Now().Sub(began), err)
	return samples, direct
}

func (r *revision) scrape(ctx context.Context, pods []Pod, sec int64) (ok bool, conc, rps float64) {
	if len(pods) == 0 || r.cfg.rev.TargetBurstCapacity == -1 {
		return false, 0, 0 // nothing to scrape (Knative: no scrape target with TBC -1)
	}
	r.scrapeNo++
	sample := pickSample(pods, time.Unix(sec, 0), r.cfg.rev.StableWindow, r.scrapeNo)
	sctx, cancel := context.WithTimeout(ctx, r.deps.scrapeTimeout)
	defer cancel()
	began := r.deps.clock.Now()
	conc, rps, err := scrapeAll(sctx, r.deps.scraper, sample, len(pods))
	r.metrics.scraped(r.deps.clock.Now().Sub(began), err)
	if err != nil {
		r.log.Debug("scrape failed; nothing recorded from pods this second", zap.Error(err))
		return false, 0, 0
	}
	return true, conc, rps
}

// statusHead is the configuration part of a Status, published by the
// revision's goroutine when its decider starts.
type statusHead struct {
	class, metric string
	target        float64
}

// currentStatus is the configuration and the latest decision. Safe for
// concurrent use.
func (r *revision) currentStatus() Status {
	st := Status{Namespace: r.key.Namespace, Name: r.key.Name}
	if h := r.head.Load(); h != nil {
		st.Class, st.Metric, st.Target = h.class, h.metric, h.target
	}
	if v, ok := r.history.latest(); ok {
		st.DecisionView = v
	} else {
		st.DecisionView = DecisionView{Recommended: -1, State: "activating"}
	}
	return st
}

// stop ends the revision's goroutine, if it runs.
func (r *revision) stop() {
	r.stopOnce.Do(func() { close(r.quit) })
}
