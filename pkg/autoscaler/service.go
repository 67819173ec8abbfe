package autoscaler

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/podfailure"
	"ebb.dev/ebb/pkg/scaling/decider"
)

// Options configure an Autoscaler.
type Options struct {
	Platform Platform
	Scraper  Scraper
	Clock    Clock       // nil: the wall clock
	Logger   *zap.Logger // nil: no logs
	// RecordDir, when set, receives one scenario file per revision and
	// configuration with the samples its decider was fed.
	RecordDir string
	// HistorySize is how many decisions are kept per revision (default
	// 10); a decision like the previous one is folded into it.
	HistorySize int
	// ScrapeTimeout bounds one second's scrape (default 700ms, so a second
	// closes in time).
	ScrapeTimeout time.Duration
	// ChartRevisions bounds the revisions whose last 10 minutes of
	// decisions are kept for the dashboard (default 64, least recently
	// used first out).
	ChartRevisions int
	// Metrics, when set, receives the autoscaler's Prometheus metrics.
	Metrics prometheus.Registerer
	// OnDecision, when set, is called after every decision by the worker
	// that made it (metrics, benchmarks); it must not block. due is when
	// the decision was due on the revision's schedule (the end of its
	// second plus the revision's phase; the time of a poke for a poke's
	// decision): the time it was made minus due is its tick-to-decision
	// latency.
	OnDecision func(key RevisionKey, dec *decider.Decision, due time.Time)

	// StatsAuth checks who posts to /v1/stats. Nil: every report over
	// HTTP is refused (401); Ingest still takes in-process reports.
	StatsAuth Authenticator
	// StatsRate bounds the stats one reporter (one pod, or one identity)
	// may push per second; 0: DefaultStatsRate.
	StatsRate float64
	// StatsBurst is how many stats a reporter may push at once; below
	// one full report (4096): DefaultStatsBurst.
	StatsBurst int
	// StatsLocalHostsOnly makes /v1/stats refuse a Host header that is
	// not an IP address or localhost (421): `autoscaler run` on a laptop,
	// where a web page's own name may resolve to 127.0.0.1.
	StatsLocalHostsOnly bool
	// MaxEventStreams bounds the concurrent GET /events streams; more are
	// answered 503. 0: DefaultMaxEventStreams.
	MaxEventStreams int

	// LearnedStore, when set, keeps the learned scale-to-zero policy's
	// state across restarts and leader failovers (see LearnedStore).
	LearnedStore LearnedStore
	// LearnedSaveInterval is how often changed learned states are saved
	// (0: DefaultLearnedSaveInterval); each revision's at most once.
	LearnedSaveInterval time.Duration
	// LearnedSaveBatch bounds the states saved at once; the rest wait for
	// the next save, the longest waiting first (0: DefaultLearnedSaveBatch).
	LearnedSaveBatch int

	// Documents parses the behavior and metrics annotations
	// (config.NewRevision); cmd/autoscaler passes hpa.DocumentParser{}.
	// nil: a revision with either annotation is refused with an error.
	Documents config.DocumentParser
}

// deps are what every revision shares; immutable after New.
type deps struct {
	platform      Platform
	scraper       Scraper
	clock         Clock
	log           *zap.Logger
	recordDir     string
	historySize   int
	scrapeTimeout time.Duration
	onDecision    func(RevisionKey, *decider.Decision, time.Time)
	documents     config.DocumentParser
	metrics       *metrics // nil without Options.Metrics
	series        *seriesStore
	learned       *learnedSaver // nil without Options.LearnedStore
	schedule      *schedule
	queue         *runQueue
}

// Status is a revision's current state as the API serves it.
type Status struct {
	Namespace string  `json:"namespace"`
	Name      string  `json:"name"`
	Class     string  `json:"class"`
	Metric    string  `json:"metric"`
	Target    float64 `json:"target"`
	// Resting is set while the revision is at zero without traffic and is
	// not stepped every second: its latest decision stands until a report,
	// a change of its configuration, or a pod it did not ask for wakes it.
	Resting bool `json:"resting,omitempty"`
	// StartFailure is why its pods cannot start, when the platform sees
	// one (StartFailureReporter).
	StartFailure *podfailure.Failure `json:"startFailure,omitempty"`
	// Parking is how the platform's parking of the revision's replica
	// goes, when it says (ParkReporter): parked, waking, a resize the node
	// has not taken, or refused (the revision goes to zero instead).
	Parking *ParkStatus `json:"parking,omitempty"`
	DecisionView
}

// ErrUnknownRevision is returned for a revision the autoscaler does not run.
var ErrUnknownRevision = errors.New("unknown revision")

// Autoscaler runs one decider per revision. Build it with New, feed it the
// ConfigMap (SetConfig) and revisions (Upsert, Delete, Release) from a
// platform watcher, activator reports (Ingest), and call Run.
//
// A revision has no goroutine: the schedule asks it to close each second
// at its phase (a hash of its key, so the revisions' work spreads over the
// second), a pool of workers runs it, and a revision at zero without
// traffic rests, costing nothing until a report, a change or its periodic
// check wakes it.
type Autoscaler struct {
	deps *deps
	gate *statsGate
	// statsGate is SetStatsGate's (nil: none).
	statsGate atomic.Pointer[StatsGate]
	streams   chan struct{} // a token per open /events stream

	mu        sync.Mutex // guards every field below, and each revision's cfgKey
	cfg       *config.Autoscaler
	cfgData   map[string]string
	revisions map[RevisionKey]*revision
	configs   map[string]*sharedConfig // by annotationsKey
	ran       bool                     // Run was called
	slabs     revisionSlabs            // where new revisions go
}

// New returns an autoscaler with Knative's default configuration. It
// starts nothing.
func New(o Options) *Autoscaler {
	d := &deps{platform: o.Platform, scraper: o.Scraper, clock: o.Clock, log: o.Logger,
		recordDir: o.RecordDir, historySize: o.HistorySize, scrapeTimeout: o.ScrapeTimeout, onDecision: o.OnDecision,
		documents: o.Documents, schedule: newSchedule(), queue: newRunQueue()}
	if d.clock == nil {
		d.clock = realClock{}
	}
	if o.ChartRevisions <= 0 {
		o.ChartRevisions = 64
	}
	d.series = newSeriesStore(o.ChartRevisions)
	if d.log == nil {
		d.log = zap.NewNop()
	}
	d.learned = newLearnedSaver(o, d.log)
	if d.historySize <= 0 {
		d.historySize = 10
	}
	if d.scrapeTimeout <= 0 {
		d.scrapeTimeout = 700 * time.Millisecond
	}
	if o.MaxEventStreams <= 0 {
		o.MaxEventStreams = DefaultMaxEventStreams
	}
	a := &Autoscaler{deps: d, gate: newStatsGate(o), streams: make(chan struct{}, o.MaxEventStreams),
		cfg: config.Defaults(), cfgData: map[string]string{},
		revisions: map[RevisionKey]*revision{}, configs: map[string]*sharedConfig{}}
	if o.Metrics != nil {
		d.metrics = newMetrics(o.Metrics, a.list)
	}
	return a
}

// list returns the revisions, in no order.
func (a *Autoscaler) list() []*revision {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Collect(maps.Values(a.revisions))
}

// Run runs the schedule, the workers (and the learned state's saver) and
// blocks until ctx is done; then it waits for them to stop, ends every
// revision (recordings closed) and saves the learned states still
// waiting. It runs once.
func (a *Autoscaler) Run(ctx context.Context) error {
	a.mu.Lock()
	if a.ran {
		a.mu.Unlock()
		return errors.New("autoscaler: Run called twice")
	}
	a.ran = true
	a.mu.Unlock()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { a.deps.queue.work(ctx) })
	}
	if s := a.deps.learned; s != nil {
		wg.Go(func() { s.run(ctx, a.deps.clock) })
	}
	a.dispatch(ctx)
	wg.Wait()
	a.shutdown()
	return nil
}

// dispatch hands the revisions their seconds at their phases until ctx
// ends.
func (a *Autoscaler) dispatch(ctx context.Context) {
	s := a.deps.schedule
	var batch []job
	for {
		s.due(a.deps.clock.Now(), func(w *dueWork) { batch = a.hand(w, batch[:0]) })
		select {
		case <-ctx.Done():
			return
		case <-a.deps.clock.After(s.wait(a.deps.clock.Now())):
		}
	}
}

// hand queues the work of one phase boundary (a close, or a resting
// revision's check) as jobs for the workers, which hand it to the
// revisions (job.run): the dispatcher reads the schedule's lists only.
// batch is scratch space, returned for the next boundary.
//
// While more closes wait than a second has (the workers fell behind), the
// boundary's closes are not queued: each of those revisions closes its
// next second when its turn comes and steps this one as a gap, as when a
// close found the revision still queued before, and the queue stays
// within about a second of closes.
func (a *Autoscaler) hand(w *dueWork, batch []job) []job {
	at := w.at.UnixNano()
	if len(w.closing) == 0 || a.deps.queue.closesWaiting() <= a.deps.schedule.ticks() {
		for _, r := range w.closing {
			batch = append(batch, job{r: r, ev: evClose, sec: w.sec, at: at})
		}
	}
	for _, r := range w.checking {
		batch = append(batch, job{r: r, ev: evCheck})
	}
	a.deps.queue.pushJobs(batch...)
	clear(batch) // keep no revision alive
	return batch
}

// shutdown ends every revision once the workers stopped: it owns them
// all now. The revisions deleted meanwhile wait in the run queue.
func (a *Autoscaler) shutdown() {
	for j, ok := a.deps.queue.pop(); ok; j, ok = a.deps.queue.pop() {
		if ev := j.r.events.Load(); j.ev == 0 && ev&evStop != 0 { // the schedule's work ends with the process
			j.r.finish(ev&evHandOver != 0)
		}
	}
	a.mu.Lock()
	revs := slices.Collect(maps.Values(a.revisions))
	a.mu.Unlock()
	for _, r := range revs {
		r.closeRecording()
	}
	if a.deps.learned != nil {
		a.deps.learned.flushAll() // the revisions and the saver stopped: their last states
	}
}
