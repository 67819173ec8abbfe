package autoscaler

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/secondloop"
	"ebb.dev/ebb/pkg/stats"
)

// maxPendingReporters bounds the activator pods whose reports are held for
// one second of one revision (stats.Pending.Max); reports of more pods are
// dropped (and counted) rather than held without limit.
const maxPendingReporters = 256

// revisionConfig is one validated configuration of a revision. Revisions
// with the same annotations share one (configs).
type revisionConfig struct {
	rev         *config.Revision
	configData  map[string]string // the ConfigMap data it came from (for recordings)
	annotations map[string]string
}

// Events a revision's owner handles (revision.events).
const (
	evClose    uint32 = 1 << iota // the schedule asks to close dueSec
	evPoke                        // traffic at zero: close the current second at once
	evWake                        // a report reached a resting revision
	evCheck                       // a resting revision's time to read its pods
	evConfig                      // a new configuration waits in nextCfg
	evStop                        // the revision was deleted or released
	evHandOver                    // with evStop: another autoscaler takes it over
)

// revision is the runtime of one revision. It has no goroutine: a worker
// of the pool runs it (run) when it has events, one worker at a time, and
// that worker owns every field not marked otherwise while it runs it.
// Tests call second directly, as the only owner.
type revision struct {
	// The fields every close of a second reads or writes come first, and
	// the rest after them: at 100,000 revisions a revision's memory is
	// cold at each of its seconds, and a close pays for each cache line
	// it touches (the object is 10 lines, Go's 640-byte size class; a close touches the first 8).

	// Shared with other goroutines: the schedule's work (take) and events.
	events  atomic.Uint32 // ev* bits waiting for the owner
	queued  atomic.Bool   // in the run queue, or being run
	atZero  atomic.Bool   // the last decision was at zero (read by report)
	dueSec  atomic.Int64  // the latest second the schedule asked to close
	dueAt   atomic.Int64  // when it was due, unix nanoseconds
	asleep  atomic.Bool   // resting: off the ticking revisions (read by report)
	phase   uint8         // phaseOf(hash)
	stopped bool          // evStop was handled: nothing runs any more

	deps     *deps
	cfg      revisionConfig
	loop     secondloop.Loop // its stepper (nil until the first second), the last second stepped, a held zero
	sink     liveSink        // the loop's side in this process (step.go)
	applied  appliedState
	scrapeNo uint32 // the closes that scraped (which pods a sample takes rotates with it)
	rest     restState
	due      time.Time                       // when the second being closed was due, for the tick latency
	wakes    wakeWatch                       // a wake from zero under way, for its latency
	metrics  atomic.Pointer[revisionMetrics] // nil without metrics, and before the first second (read by the collector)

	mu    sync.Mutex       // guards inbox, released, ended and endWait
	inbox secondloop.Inbox // the activator reports not taken by a close yet

	history history
	chart   seriesRef // its view of deps.series (owned by the owner)

	// Read or written only now and then.
	key      RevisionKey
	hash     uint32        // keyHash(key): its phase and its rest checks (restCheckAfter)
	recSeq   int32         // the recordings started
	wasZero  bool          // a configuration change ended a decider at zero: the next starts inactive
	released bool          // deleted: reports are refused (guarded by mu)
	ended    bool          // finish ran: no decision follows (guarded by mu)
	endWait  chan struct{} // closed by finish; made by the first waitEnded (guarded by mu)
	cfgKey   string        // the configs entry cfg came from
	rec      *recording
	warnings warnings // the HPA class's last metric warning
	carry    []byte   // the learned state of the decider a configuration change ended
	savedGen uint64   // the learned state's generation last offered to the saver
	sched    schedSlot
	nextCfg  atomic.Pointer[revisionConfig]
	names    atomic.Pointer[config.KnativeNames] // its Knative names when its labels give any (SetLabels); nil: its own name
	head     atomic.Pointer[statusHead]
}

// restState is the owner's view of rest (decider.Stepper.Rest).
type restState struct {
	ok   bool      // the last decision was at rest
	wake time.Time // when the learned policy may pre-warm; zero: never
}

// appliedState is what was last applied through the platform.
type appliedState struct {
	known     bool
	replicas  int32
	activator bool
	parked    bool // the platform parked the replica (park.go)
}

func newRevision(key RevisionKey, cfg revisionConfig, d *deps) *revision {
	return initRevision(new(revision), key, cfg, d)
}

// initRevision makes r, zero memory no one else refers to yet (a slot of
// revisionSlabs), the revision of key.
func initRevision(r *revision, key RevisionKey, cfg revisionConfig, d *deps) *revision {
	h := keyHash(key)
	*r = revision{
		key: key, deps: d, cfg: cfg, hash: h, phase: phaseOf(h),
		history: newHistory(d.historySize),
	}
	r.inbox.Pending.Max = maxPendingReporters
	r.sink.r = r
	r.sched.index = -1
	return r
}

// log is the autoscaler's logger with the revision named: built when a
// line is written (rarely), not kept per revision.
func (r *revision) log() *zap.Logger {
	return r.deps.log.With(zap.Stringer("revision", r.key))
}

// signal hands events to the revision's owner: a worker runs it soon,
// unless one runs it already and will see them. Safe for concurrent use;
// never blocks.
func (r *revision) signal(ev uint32) {
	r.events.Or(ev)
	if r.queued.CompareAndSwap(false, true) {
		r.deps.queue.push(r)
	}
}

// take hands the schedule's work of j (a close, or a resting revision's
// check) to the revision, and reports whether the caller is to run it
// (no other worker runs it or has it queued). A close of a second at or
// before the latest one handed is dropped: jobs of one revision taken by
// two workers may come out of order, and the latest second is closed
// either way (the revision steps every second up to it). Safe for
// concurrent use.
func (r *revision) take(j *job) bool {
	if j.ev == evClose {
		for old := r.dueSec.Load(); ; old = r.dueSec.Load() {
			if j.sec <= old {
				return false
			}
			if r.dueSec.CompareAndSwap(old, j.sec) {
				break
			}
		}
		r.dueAt.Store(j.at)
	}
	r.events.Or(j.ev)
	return r.queued.CompareAndSwap(false, true)
}

// run handles the revision's events until none is left; the worker that
// calls it owns the revision meanwhile.
func (r *revision) run(ctx context.Context) {
	for {
		r.handle(ctx, r.events.Swap(0))
		if r.stopped {
			return // stays queued: nothing runs it again
		}
		r.queued.Store(false)
		// An event signalled after the Swap found queued still true and
		// left the revision to this worker: take it back, unless a signal
		// after the Store queued the revision again.
		if r.events.Load() == 0 || !r.queued.CompareAndSwap(false, true) {
			return
		}
	}
}

// handle is one run of the owner: a stop, a new configuration, a wake, a
// resting revision's check, a poke, the scheduled close; then the revision
// rests when its last decision says it may.
func (r *revision) handle(ctx context.Context, ev uint32) {
	if r.stopped {
		return
	}
	if ev&evStop != 0 {
		r.finish(ev&evHandOver != 0)
		return
	}
	if ev&evConfig != 0 {
		if cfg := r.nextCfg.Swap(nil); cfg != nil {
			r.reconfigure(*cfg)
		}
	}
	if ev&(evWake|evPoke|evConfig) != 0 {
		r.wake()
	}
	// The clock is read only by what needs it: the scheduled close of a
	// revision that is not resting reads none.
	if r.asleep.Load() { // resting: nothing but its check runs
		if ev&evCheck != 0 {
			if now := r.deps.clock.Now(); r.stillAtRest(ctx, now) {
				r.sleep(now)
			} else {
				r.wake()
			}
		}
		return
	}
	if ev&evPoke != 0 { // its open second: the one its phase closes next
		now := r.deps.clock.Now()
		r.due = now
		r.second(ctx, now.Add(-time.Duration(r.phase)*phaseStep).Unix())
	}
	if ev&evClose != 0 {
		r.due = time.Unix(0, r.dueAt.Load())
		r.second(ctx, r.dueSec.Load())
	}
	if r.rest.ok && ctx.Err() == nil {
		r.sleep(r.deps.clock.Now())
	}
}

// stillAtRest is the check of a resting revision: its pre-warm is not
// due, and no pod is ready.
func (r *revision) stillAtRest(ctx context.Context, now time.Time) bool {
	if !r.rest.wake.IsZero() && !now.Before(r.rest.wake) || r.hasPending() {
		return false
	}
	pods, err := r.deps.platform.ReadyPods(ctx, r.key)
	return err == nil && len(pods) == 0
}

// sleep takes the revision off the ticking ones until its next check:
// restCheckAfter(hash) from now, or its pre-warm when that comes first (and when that
// has come, it does not sleep).
func (r *revision) sleep(now time.Time) {
	wake := now.Add(restCheckAfter(r.hash))
	if !r.rest.wake.IsZero() {
		if !r.rest.wake.After(now) {
			r.wake()
			return
		}
		wake = minTime(wake, r.rest.wake)
	}
	if r.loop.Stepper != nil && !r.loop.Slept {
		r.loop.Stepper.Trim(time.Unix(r.loop.Last, 0)) // its windows are empty: at rest
	}
	r.loop.Slept = true
	if !r.asleep.Swap(true) {
		r.deps.metrics.rested(1)
	}
	r.deps.schedule.sleep(r, wake)
	// A report that came while the revision was going to sleep may have
	// seen it awake and not woken it: this sees that report, or the report
	// saw asleep set and signalled evWake.
	if r.hasPending() {
		r.wake()
	}
}

func (r *revision) hasPending() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.inbox.Len() > 0
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// wake makes the revision close every second again, until a decision says
// it is at rest.
func (r *revision) wake() {
	r.rest.ok = false
	if r.asleep.Swap(false) {
		r.deps.metrics.rested(-1)
	}
	r.deps.schedule.tick(r)
}

// stop ends the revision with ev (evStop, and evHandOver when another
// autoscaler takes it over): at once when no worker runs it, else by the
// worker that does. Either way it is never queued again.
func (r *revision) stop(ev uint32) {
	r.events.Or(ev)
	if r.queued.CompareAndSwap(false, true) {
		r.handle(context.Background(), r.events.Swap(0))
	}
}

// finish ends the revision: off the schedule, its recording closed; for a
// hand-over, its learned state offered one last time (Handoff saves it).
func (r *revision) finish(handOver bool) {
	r.stopped = true
	r.deps.schedule.remove(r)
	if r.asleep.Swap(false) {
		r.deps.metrics.rested(-1)
	}
	if handOver && r.loop.Stepper != nil && r.deps.learned != nil {
		r.learnedOffer()
	}
	r.loop.Reset(&r.sink) // a held zero is not applied: the next owner decides
	r.closeRecording()

	r.mu.Lock()
	r.ended = true
	if r.endWait != nil {
		close(r.endWait)
	}
	r.mu.Unlock()
}

// waitEnded returns once finish ran (a worker may be closing a second of
// the revision when it is stopped), or when ctx ends. Safe for concurrent
// use.
func (r *revision) waitEnded(ctx context.Context) {
	r.mu.Lock()
	if r.ended {
		r.mu.Unlock()
		return
	}
	if r.endWait == nil {
		r.endWait = make(chan struct{})
	}
	ch := r.endWait
	r.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

// report queues an activator report for its second (secondloop.Inbox: one of
// a closed second is late; the others count in the next close by the rule
// of stats.Pending: a pod's newer window replaces its older one, and of
// its pokes the one with the most load is kept), pokes the revision when
// traffic arrives at zero, and wakes it when it rests. It returns false
// when the revision was deleted (the report is not taken). Safe for
// concurrent use.
func (r *revision) report(st stats.Stat) bool {
	r.mu.Lock()
	if r.released {
		r.mu.Unlock()
		return false
	}
	r.inbox.Add(st, secondloop.SecondOf(st.Time, time.Duration(r.phase)*phaseStep))
	r.mu.Unlock()
	switch {
	case st.AverageConcurrency > 0 && r.atZero.Load():
		r.signal(evPoke)
	case r.asleep.Load():
		r.signal(evWake)
	}
	return true
}

// release refuses further reports and returns those not yet taken.
func (r *revision) release() []stats.Stat {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.released = true
	return r.inbox.Drain()
}

// update hands a new configuration to the revision's owner; a newer one
// replaces one not yet taken.
func (r *revision) update(cfg revisionConfig) {
	r.nextCfg.Store(&cfg)
	r.signal(evConfig)
}

// takeReports hands the reports to the close of second sec
// (secondloop.Inbox.Take): the on-time ones appended to dst, the late ones to
// late.
func (r *revision) takeReports(sec int64, dst []stats.Stat, late []secondloop.Late) ([]stats.Stat, []secondloop.Late) {
	r.mu.Lock()
	p, l, dropped := r.inbox.Take(sec, dst, late)
	r.mu.Unlock()
	if dropped > 0 {
		r.log().Warn("activator reports dropped", zap.Int("count", dropped))
	}
	return p, l
}

// statusHead is the configuration part of a Status, published by the
// revision's owner when its decider starts.
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
	st.Resting = r.asleep.Load()
	if pr, ok := r.deps.platform.(ParkReporter); ok {
		if ps, ok := pr.ParkStatus(r.key); ok {
			st.Parking = &ps
		}
	}
	if fr, ok := r.deps.platform.(StartFailureReporter); ok {
		if f, ok := fr.Failure(r.key); ok {
			st.StartFailure = &f
		}
	}
	return st
}
