package autoscaler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/decider"
	"ebb.dev/ebb/pkg/stats"
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
	// OnDecision, when set, is called after every decision from the
	// revision's goroutine (metrics, benchmarks); it must not block.
	OnDecision func(RevisionKey, *decider.Decision)

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
	onDecision    func(RevisionKey, *decider.Decision)
	documents     config.DocumentParser
	metrics       *metrics // nil without Options.Metrics
	series        *seriesStore
	learned       *learnedSaver   // nil without Options.LearnedStore
	work          chan *secondJob // the worker pool's queue
}

// Status is a revision's current state as the API serves it.
type Status struct {
	Namespace string  `json:"namespace"`
	Name      string  `json:"name"`
	Class     string  `json:"class"`
	Metric    string  `json:"metric"`
	Target    float64 `json:"target"`
	DecisionView
}

// workers is the size of the pool that runs the revisions' seconds: enough
// to overlap scrapes that wait on the network, few enough that thousands
// of revisions do not all hold deep stacks at the same time.
const workers = 64

// ErrUnknownRevision is returned for a revision the autoscaler does not run.
var ErrUnknownRevision = errors.New("unknown revision")

// Autoscaler runs one decider per revision. Build it with New, feed it the
// ConfigMap (SetConfig) and revisions (Upsert, Delete) from a platform
// watcher, activator reports (Ingest), and call Run.
type Autoscaler struct {
	deps    *deps
	gate    *statsGate
	streams chan struct{} // a token per open /events stream

	mu        sync.Mutex // guards every field below
	cfg       *config.Autoscaler
	cfgData   map[string]string
	revisions map[RevisionKey]*revision
	anns      map[RevisionKey]map[string]string
	runCtx    context.Context // nil until Run
	wg        sync.WaitGroup
}

// New returns an autoscaler with Knative's default configuration. It
// starts nothing.
func New(o Options) *Autoscaler {
	d := &deps{platform: o.Platform, scraper: o.Scraper, clock: o.Clock, log: o.Logger,
		recordDir: o.RecordDir, historySize: o.HistorySize, scrapeTimeout: o.ScrapeTimeout, onDecision: o.OnDecision,
		documents: o.Documents}
	if d.clock == nil {
		d.clock = RealClock{}
	}
	if o.ChartRevisions <= 0 {
		o.ChartRevisions = 64
	}
	d.series = newSeriesStore(o.ChartRevisions)
	d.work = make(chan *secondJob)
	if o.Metrics != nil {
		d.metrics = newMetrics(o.Metrics)
	}
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
	return &Autoscaler{deps: d, gate: newStatsGate(o), streams: make(chan struct{}, o.MaxEventStreams),
		cfg: config.Defaults(), cfgData: map[string]string{},
		revisions: map[RevisionKey]*revision{}, anns: map[RevisionKey]map[string]string{}}
}

// Run starts the revisions' goroutines (and the learned state's saver) and
// blocks until ctx is done, then waits for them to stop and saves the
// learned states still waiting.
func (a *Autoscaler) Run(ctx context.Context) error {
	var pool sync.WaitGroup
	for range workers {
		pool.Add(1)
		go func() {
			defer pool.Done()
			work(ctx, a.deps.work)
		}()
	}
	defer pool.Wait()
	saverDone := make(chan struct{})
	if s := a.deps.learned; s != nil {
		go func() {
			defer close(saverDone)
			s.run(ctx, a.deps.clock)
		}()
	} else {
		close(saverDone)
	}
	a.mu.Lock()
	a.runCtx = ctx
	for _, r := range a.revisions {
		a.startLocked(r)
	}
	a.mu.Unlock()
	<-ctx.Done()
	a.wg.Wait()
	<-saverDone
	if a.deps.learned != nil {
		a.deps.learned.flushAll() // the revisions and the saver stopped: their last states
	}
	return nil
}

func (a *Autoscaler) startLocked(r *revision) {
	if a.runCtx == nil {
		return
	}
	ctx := a.runCtx
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		r.run(ctx)
	}()
}

// SetConfig validates new config-autoscaler data and, when valid, applies
// it to every revision. When invalid, or when it would make a revision's
// annotations invalid, the error names every problem and the previous
// configuration stays in force (for those revisions, or for all).
func (a *Autoscaler) SetConfig(data map[string]string) error {
	cfg, err := config.NewAutoscalerFromMap(data)
	if err != nil {
		return fmt.Errorf("config-autoscaler rejected, the previous configuration stays: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cfg, a.cfgData = cfg, maps.Clone(data)
	var errs []error
	for key, r := range a.revisions {
		rc, err := a.resolveLocked(a.anns[key])
		if err != nil {
			errs = append(errs, fmt.Errorf("revision %s keeps its previous configuration: %w", key, err))
			continue
		}
		r.update(rc)
	}
	return errors.Join(errs...)
}

func (a *Autoscaler) resolveLocked(ann map[string]string) (revisionConfig, error) {
	rev, err := config.NewRevision(a.cfg, ann, a.deps.documents)
	if err != nil {
		return revisionConfig{}, err
	}
	return revisionConfig{rev: rev, configData: a.cfgData, annotations: ann}, nil
}

// Upsert adds a revision or changes its annotations. Invalid annotations
// are rejected with every problem named; a running revision keeps its
// previous configuration.
func (a *Autoscaler) Upsert(key RevisionKey, annotations map[string]string) error {
	ann := maps.Clone(annotations)
	a.mu.Lock()
	defer a.mu.Unlock()
	rc, err := a.resolveLocked(ann)
	if err != nil {
		if _, ok := a.revisions[key]; ok {
			return fmt.Errorf("revision %s: annotations rejected, the previous configuration stays: %w", key, err)
		}
		return fmt.Errorf("revision %s: annotations rejected, not autoscaled until fixed: %w", key, err)
	}
	a.anns[key] = ann
	if r, ok := a.revisions[key]; ok {
		r.update(rc)
		return nil
	}
	r := newRevision(key, rc, a.deps)
	a.revisions[key] = r
	a.countLocked()
	a.startLocked(r)
	return nil
}

// Delete stops autoscaling a revision.
func (a *Autoscaler) Delete(key RevisionKey) {
	a.mu.Lock()
	r, ok := a.revisions[key]
	delete(a.revisions, key)
	delete(a.anns, key)
	a.countLocked()
	a.mu.Unlock()
	if ok {
		r.stop()
		a.deps.metrics.forget(key)
		a.deps.series.forget(key)
		if a.deps.learned != nil {
			a.deps.learned.forget(key)
		}
	}
}

// Ingest takes an activator report. It never blocks on a revision.
func (a *Autoscaler) Ingest(st stats.Stat) error {
	key, err := ParseRevisionKey(st.Revision)
	if err != nil {
		return fmt.Errorf("activator report: %w", err)
	}
	if st.Source != stats.SourceActivator {
		return fmt.Errorf("report for %s from a %s: only activators push reports", key, st.Source)
	}
	a.mu.Lock()
	r, ok := a.revisions[key]
	a.mu.Unlock()
	if !ok {
		return fmt.Errorf("report for %s: %w", key, ErrUnknownRevision)
	}
	r.report(st)
	return nil
}

// Statuses returns every revision's current status, sorted by key.
func (a *Autoscaler) Statuses() []Status {
	a.mu.Lock()
	revs := slices.Collect(maps.Values(a.revisions))
	a.mu.Unlock()
	out := make([]Status, 0, len(revs))
	for _, r := range revs {
		out = append(out, r.currentStatus())
	}
	slices.SortFunc(out, func(x, y Status) int {
		return cmpKeys(RevisionKey{x.Namespace, x.Name}, RevisionKey{y.Namespace, y.Name})
	})
	return out
}

func cmpKeys(x, y RevisionKey) int {
	if x.Namespace != y.Namespace {
		return compareStrings(x.Namespace, y.Namespace)
	}
	return compareStrings(x.Name, y.Name)
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Decisions returns up to limit of a revision's last decisions, newest first.
func (a *Autoscaler) Decisions(key RevisionKey, limit int) (Status, []DecisionView, error) {
	a.mu.Lock()
	r, ok := a.revisions[key]
	a.mu.Unlock()
	if !ok {
		return Status{}, nil, fmt.Errorf("%s: %w", key, ErrUnknownRevision)
	}
	return r.currentStatus(), r.history.last(limit), nil
}

func (a *Autoscaler) countLocked() {
	if a.deps.metrics != nil {
		a.deps.metrics.revisions.Set(float64(len(a.revisions)))
	}
}

// work runs seconds until ctx ends. A job handed over is always finished,
// so its revision never waits forever.
func work(ctx context.Context, jobs <-chan *secondJob) {
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-jobs:
			j.r.second(j.ctx, j.sec)
			j.done <- struct{}{}
		}
	}
}
