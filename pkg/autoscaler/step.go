package autoscaler

import (
	"context"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/decider"
	"ebb.dev/ebb/pkg/scaling/secondloop"
)

// step closes one second through the revision's loop (secondloop.Loop):
// seconds missed since the last step are gaps; those a resting revision
// slept through change nothing (decider.Stepper.Rest) and are skipped,
// but for its last tick, decided once so that the history and the status
// show the rest up to then. A scale to zero waits secondloop.LateBound
// closes for late activator reports.
func (r *revision) step(ctx context.Context, c *secondloop.Closing) {
	r.sink.ctx, r.sink.closing = ctx, c.Sec
	r.sink.due = r.due
	if r.sink.due.IsZero() {
		r.sink.due = time.Unix(c.Sec+1, 0) // a test's close: from the end of the second
	}
	r.loop.Close(c, &r.sink)
	r.sink.ctx = nil
}

// liveSink is the loop's side in the autoscaler: it starts the decider
// and its recording, publishes decisions (history, series, metrics, the
// decision hook) and applies them through the platform. Owned by the
// revision's owner, as the loop.
type liveSink struct {
	r       *revision
	ctx     context.Context // the close's; nil between closes
	closing int64           // the second being closed
	due     time.Time       // when its decision was due, for the tick latency
}

func (s *liveSink) Start(sec int64, ready int32) *decider.Stepper {
	st := s.r.start(sec, ready)
	s.r.learnedStart(s.ctx, st.Decider())
	return st
}

// Final records the second; input ends a rest (at rest again only when a
// decision says so).
func (s *liveSink) Final(sec int64, in decider.Second) {
	r := s.r
	if r.rec != nil {
		r.rec.sample(sec, in)
	}
	if in.HasMetric || in.Pods != nil || in.Ready != nil && *in.Ready != r.loop.Stepper.Ready() {
		r.rest.ok = false
	}
	r.learnedOffer()
}

func (s *liveSink) Apply(dec *decider.Decision) bool {
	s.r.apply(s.ctx, dec)
	return s.r.applied.known
}

// Decided publishes a decision; due is when it was due (the revision's
// phase after its second), for the tick latency, which a second decided
// again does not count.
func (s *liveSink) Decided(sec int64, dec *decider.Decision, again bool) {
	r := s.r
	r.rest.wake, r.rest.ok = r.loop.Stepper.Rest(dec)
	r.rest.ok = r.rest.ok && !r.loop.Holding() // a held zero applies at a close: no rest before
	r.atZero.Store(dec.AtZero)
	r.learnedOffer()
	r.warn(s.ctx, dec, time.Unix(sec, 0))
	ready := r.loop.Stepper.Ready()
	if took, ok := r.wakes.ready(ready, r.deps.clock); ok {
		r.deps.metrics.woke(wakeFromZero, took)
	}
	r.history.add(dec, ready)
	r.deps.series.record(&r.chart, r.key, dec, ready, r.cfg.rev.Target)
	if rm := r.metrics.Load(); rm != nil {
		rm.observe(dec, ready, r.cfg.rev.Target)
		if !again {
			rm.ticked(r.deps.clock.Now().Sub(s.dueOf(sec)))
		}
	}
	if r.deps.onDecision != nil {
		r.deps.onDecision(r.key, dec, s.dueOf(sec))
	}
	if ce := r.deps.log.Check(zap.DebugLevel, "decision"); ce != nil {
		ce.Write(zap.Stringer("revision", r.key), zap.Int32("recommended", dec.Recommended), zap.Int32("desired", dec.Desired),
			zap.Bool("panic", dec.Panic), zap.Int32("ebc", dec.EBC), zap.Bool("activatorInPath", dec.ActivatorInPath),
			zap.Float64("stable", dec.Stable), zap.Bool("again", again), zap.Bool("held", r.loop.Holding()))
	}
}

// dueOf is when the decision of second sec was due: a second before the
// one closing (a gap's, or one decided again) was due as many seconds
// before.
func (s *liveSink) dueOf(sec int64) time.Time {
	if sec == s.closing {
		return s.due
	}
	return s.due.Add(-time.Duration(s.closing-sec) * time.Second)
}

// start creates the decider at the first second (in panic when more than
// one pod is ready, so a restart never scales down blind), its ticks on
// the revision's own seconds (tickOrigin), and, when asked, a recording
// whose t = 0 is the tick origin (a replay ticks at the multiples of the
// tick interval from t = 0).
func (r *revision) start(sec int64, ready int32) *decider.Stepper {
	first := time.Unix(sec, 0)
	origin := tickOrigin(r.hash, sec, r.cfg.rev.TickInterval)
	head := &statusHead{class: r.cfg.rev.Class, metric: r.cfg.rev.Metric, target: r.cfg.rev.Target}
	if ms := r.cfg.rev.Metrics; len(ms) > 0 {
		head.metric, head.target = ms[0].Name(), ms[0].Target // the HPA class: its first metric's own target
	}
	r.head.Store(head)
	if rm := r.metrics.Load(); rm == nil || rm.metric != r.cfg.rev.Metric {
		r.metrics.Store(r.deps.metrics.forRevision(r.cfg.rev.Metric)) // series under the new metric only
	}
	inactive := r.startsAtZero(ready)
	st := decider.NewStepper(r.cfg.rev, decider.StepperOptions{First: first, Ready: ready, TickOrigin: time.Unix(origin, 0), Inactive: inactive})
	if inactive {
		r.log().Info("decider starts at zero: inactive until traffic comes, its initial scale counted as reached")
	}
	if r.deps.recordDir == "" {
		return st
	}
	r.recSeq++
	rec, err := newRecording(r.deps.recordDir, r.key, int(r.recSeq), origin, recordingHeader{
		Description: "recorded by the autoscaler from revision " + r.key.String() + " at " + time.Unix(origin, 0).UTC().Format(time.RFC3339),
		Config:      r.cfg.configData, Annotations: r.cfg.annotations, StartInactive: inactive,
	})
	if err != nil {
		r.log().Error("cannot record this revision", zap.Error(err))
		return st
	}
	r.rec = rec
	return st
}

// startsAtZero reports whether a decider that starts now with ready pods
// starts inactive at zero (decider.StepperOptions.Inactive): no pod is
// ready, and the decider a configuration change ended was at zero, or the
// platform says the revision's scale target is at zero and was scaled
// before (an autoscaler restart, a bucket changing hands). A new revision
// starts activating at its initial scale.
func (r *revision) startsAtZero(ready int32) bool {
	wasZero := r.wasZero
	r.wasZero = false
	if ready != 0 || r.cfg.rev.Class != config.ClassKPA {
		return false
	}
	if wasZero {
		return true
	}
	z, ok := r.deps.platform.(ZeroReporter)
	return ok && z.ScaledToZero(r.key)
}

// apply sets the replica count and the activator's place in the path when
// they differ from what was last applied, and parks or wakes the replica
// as the decision says (park.go: a wake before the scale, a park after
// it). A failure is retried with the next decision.
func (r *revision) apply(ctx context.Context, dec *decider.Decision) {
	a := &r.applied
	if !a.known || a.activator != dec.ActivatorInPath {
		if err := r.deps.platform.SetActivatorInPath(ctx, r.key, dec.ActivatorInPath); err != nil {
			r.log().Warn("routing change failed; retrying with the next decision", zap.Bool("activatorInPath", dec.ActivatorInPath), zap.Error(err))
			a.known = false
			return
		}
		if ce := r.deps.log.Check(zap.InfoLevel, "activator in path changed"); ce != nil && a.known {
			ce.Write(zap.Stringer("revision", r.key), zap.Bool("activatorInPath", dec.ActivatorInPath))
		}
		a.activator = dec.ActivatorInPath
	}
	r.unpark(ctx, dec)
	if !a.known || a.replicas != dec.Desired {
		if a.known && dec.Desired < a.replicas {
			r.costPods(ctx, dec.Desired) // the busiest stay (deletioncost.go)
		}
		if err := r.scale(ctx, dec); err != nil {
			r.log().Warn("scaling failed; retrying with the next decision", zap.Int32("desired", dec.Desired), zap.Error(err))
			a.known = false
			return
		}
		if ce := r.deps.log.Check(zap.InfoLevel, "scaled"); ce != nil {
			ce.Write(zap.Stringer("revision", r.key), zap.Int32("from", a.replicas), zap.Int32("to", dec.Desired),
				zap.String("reason", mainReason(dec)))
		}
		if a.known {
			r.wakes.scaled(a.replicas, dec.Desired, r.deps.clock.Now())
		}
		a.replicas = dec.Desired
	}
	r.park(ctx, dec)
	a.known = true
}

// scale asks the platform for dec.Desired replicas, saying why when the
// platform listens (ReasonedScaler).
func (r *revision) scale(ctx context.Context, dec *decider.Decision) error {
	rs, ok := r.deps.platform.(reasonedScaler)
	if !ok {
		return r.deps.platform.Scale(ctx, r.key, dec.Desired)
	}
	msgs := make([]string, 0, len(dec.Reasons()))
	for _, reason := range dec.Reasons() {
		msgs = append(msgs, reason.Message())
	}
	why := ScaleReason{Code: mainReason(dec), Message: strings.Join(msgs, "; ")}
	if dec.Class == config.ClassHPA {
		why = hpaRescale(dec, why.Message)
	}
	return rs.ScaleWithReason(ctx, r.key, dec.Desired, why)
}

// warnInterval is how often a metric warning that does not change is sent
// again (Kubernetes' HPA controller sends it at every sync, and its Event
// recorder folds the repeats into a count).
const warnInterval = time.Minute

// warn sends the HPA class's metric warning through a platform that shows
// warnings (Warner): when no metric gave a count (ScalingActive False),
// Kubernetes' reason and message, at once when they change, then at most
// once a warnInterval.
func (r *revision) warn(ctx context.Context, dec *decider.Decision, now time.Time) {
	w, ok := r.deps.platform.(Warner)
	if !ok || dec.Class != config.ClassHPA {
		return
	}
	reason, message, failing := metricWarning(dec)
	if r.warnings.due(reason, message, failing, now) {
		w.Warn(ctx, r.key, reason, message)
	}
}

// metricWarning is the HPA class's ScalingActive False condition of dec, if
// it has one: no metric gave a replica count.
func metricWarning(dec *decider.Decision) (reason, message string, failing bool) {
	for _, c := range decider.HPAConditions(dec.Reasons()) {
		if c.Type == decider.ConditionScalingActive && c.Status == "False" {
			return c.Reason, c.Message, true
		}
	}
	return "", "", false
}

// warnings remembers the last warning sent, to send a new one at once and
// a repeated one at most once a warnInterval.
type warnings struct {
	last string // reason and message; "" when none is pending
	at   time.Time
}

// due reports whether the warning (reason, message) is to be sent at now;
// failing false (the metrics work again) clears it, so the next failure
// is sent at once.
func (w *warnings) due(reason, message string, failing bool, now time.Time) bool {
	if !failing {
		w.last = ""
		return false
	}
	key := reason + "\x00" + message
	if key == w.last && now.Sub(w.at) < warnInterval {
		return false
	}
	w.last, w.at = key, now
	return true
}

// hpaRescale is the HPA class's scale Event as Kubernetes' controller
// records it: SuccessfulRescale, "New size: N; reason: R", R being a
// metric above target, "All metrics below target", or the bound, followed
// by Ebb's sentences.
func hpaRescale(dec *decider.Decision, sentences string) ScaleReason {
	reason := "All metrics below target"
	for _, r := range dec.Reasons() {
		switch {
		case r.Code == decider.TooManyReplicas && r.Detail == "bounds":
			reason = "Current number of replicas above Spec.MaxReplicas"
		case r.Code == decider.TooFewReplicas && r.Detail == "bounds":
			reason = "Current number of replicas below Spec.MinReplicas"
		case decider.MetricAboveTarget(r) && reason == "All metrics below target":
			reason = r.Detail + " above target"
		}
	}
	return ScaleReason{Code: "SuccessfulRescale",
		Message: "New size: " + strconv.Itoa(int(dec.Desired)) + "; reason: " + reason + " (" + sentences + ")"}
}

// mainReason is the code of the reason that speaks for the count: the last
// bound applied, else the metric.
func mainReason(dec *decider.Decision) string {
	rs := dec.Reasons()
	for i := len(rs) - 1; i >= 0; i-- {
		switch rs[i].Code {
		case decider.StableTarget, decider.PanicTarget, decider.StateChanged,
			decider.ActivatorNoReadyPods, decider.ActivatorScaleUnknown,
			decider.ActivatorBurstCapacity, decider.ActivatorOutOfPath, decider.ActivatorParked:
			continue
		}
		return string(rs[i].Code)
	}
	if len(rs) > 0 {
		return string(rs[0].Code)
	}
	return ""
}

// reconfigure takes a new configuration: the decider restarts with it at
// the next second (in panic if more than one pod is ready; inactive when
// the revision is at zero), and a new recording starts.
func (r *revision) reconfigure(cfg revisionConfig) {
	r.cfg = cfg
	if r.loop.Stepper == nil {
		return
	}
	r.log().Info("configuration changed; decider restarts")
	if d := r.loop.Stepper.Decider(); d != nil {
		r.carry, _ = d.LearnedState() // the idle-gap history outlives the settings
	}
	r.wasZero = r.atZero.Load() && r.applied.known && r.applied.replicas == 0 // and so does a revision's zero
	r.loop.Reset(&r.sink)                                                     // a held zero is dropped: the new decider decides afresh
	r.closeRecording()
	r.rest = restState{}
}

func (r *revision) closeRecording() {
	if r.rec == nil {
		return
	}
	if err := r.rec.close(); err != nil {
		r.log().Error("recording incomplete", zap.Error(err))
	}
	r.rec = nil
}
