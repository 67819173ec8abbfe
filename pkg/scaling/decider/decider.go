package decider

import (
	"math"
	"time"

	"ebb.dev/ebb/pkg/behavior"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/learned"
	"ebb.dev/ebb/pkg/scaling/window"
)

// delayGranularity is the slot size of the scale-down delay window. Knative
// indexes it by unix seconds / 2 (its fixed tick), whatever the tick.
const delayGranularity = 2 * time.Second

// activationTimeoutBuffer is added to the progress deadline (Knative's
// activationTimeoutBuffer).
const activationTimeoutBuffer = 30 * time.Second

// Input is what a decision needs besides the recorded samples.
type Input struct {
	Now time.Time
	// Ready is the number of ready pods before this decision.
	Ready int32
	// Reachable is false when no route sends traffic to the revision.
	Reachable bool
}

// Decider decides the scale of one revision. Build it with New; one
// goroutine owns it.
type Decider struct {
	rev *config.Revision

	// stable and panic hold the scaling metric (concurrency or rps) only:
	// the other one is never read, so it is not kept.
	stableWin, panicWin *window.Buckets
	delay               *window.MaxWindow // nil without scale-down delay

	recommendation int32 // -1 until the first decision with data
	ebc            int32
	panicking      bool
	panicStart     time.Time
	maxPanicPods   int32

	target targetState

	// history is the behavior's memory (recommendations and scale events);
	// nil without a behavior annotation.
	history *behavior.History

	// learned is the learned scale-to-zero policy's state; nil with
	// Knative's policy.
	learned *learned.Policy

	// parkRefused: the platform cannot park the replica (RefuseParking).
	parkRefused bool
}

// New returns the KPA decider of a revision created at now with ready pods.
// rev must be a validated config (config.NewRevision); it is not copied
// and must not change afterwards.
func New(rev *config.Revision, now time.Time, ready int32) *Decider {
	d := &Decider{
		rev:            rev,
		stableWin:      window.NewBuckets(rev.StableWindow),
		panicWin:       window.NewBuckets(rev.PanicWindow),
		recommendation: -1,
		ebc:            initialEBC(rev),
		maxPanicPods:   ready,
		target:         newTargetState(rev, now),
	}
	if rev.ScaleDownDelay > 0 {
		d.delay = window.NewMaxWindow(rev.ScaleDownDelay, delayGranularity)
	}
	if rev.Behavior != nil {
		d.history = &behavior.History{}
	}
	d.learned = learned.New(rev)
	// A decider that starts with more than one ready pod (an autoscaler
	// restart) panics for a stable window so that it never scales down
	// before it has a window of data.
	if ready > 1 {
		d.panicking, d.panicStart = true, now
	}
	return d
}

func initialEBC(rev *config.Revision) int32 {
	switch {
	case rev.TargetBurstCapacity == 0:
		return 0
	case rev.TargetBurstCapacity < 0:
		return -1
	}
	return toInt32(float64(rev.InitialScale)*rev.Total-rev.TargetBurstCapacity, math.Trunc)
}

// Record takes in the revision-wide averages of one second: concurrency
// (requests in flight) and rps (requests received). Several records for one
// second add up.
func (d *Decider) Record(now time.Time, concurrency, rps float64) {
	v := concurrency
	if d.rev.Metric == config.MetricRPS {
		v = rps
	}
	if !inBounds(v) {
		return // the Stepper refuses such seconds with a reason; a direct caller gets nothing recorded
	}
	if d.learned != nil {
		d.learned.Observe(now, concurrency, rps)
	}
	d.stableWin.Record(now, v)
	d.panicWin.Record(now, v)
}

// Recommendation is the current recommendation; -1 before the first
// decision with data.
func (d *Decider) Recommendation() int32 { return d.recommendation }

// WantsPoke reports whether a sample with this concurrency should trigger a
// decision at once: the revision is at zero and traffic arrived.
func (d *Decider) WantsPoke(concurrency float64) bool {
	return concurrency != 0 && d.atZero()
}

// atZero reports whether the revision is at zero for pokes: its
// recommendation is exactly 0, or the learned policy released its last
// replica (while the recommendation, an average over the stable window,
// may still be 1), or its replica is parked (a poke wakes it at once).
func (d *Decider) atZero() bool {
	return d.recommendation == 0 || (d.learned != nil && d.target.replicas == 0) || d.target.parked
}

// Decide makes the decision at in.Now: the recommendation from the windows
// ending at in.Now, then the scale target and the activator.
func (d *Decider) Decide(in Input) Decision {
	var dec Decision
	d.decideInto(in, &dec)
	return dec
}

// decideInto is Decide writing into dec, which it overwrites: a caller
// that keeps one Decision avoids copying it on every tick.
func (d *Decider) decideInto(in Input, dec *Decision) {
	*dec = Decision{At: in.Now, Class: d.rev.Class}
	if stable, panicAvg, ok := d.observe(in.Now); ok {
		dec.HasData, dec.Stable, dec.PanicAverage = true, stable, panicAvg
		d.recommend(in, stable, panicAvg, dec)
		if d.history != nil {
			d.limitByBehavior(in.Now, dec)
		}
	} else {
		dec.add(noDataReason())
	}
	before := d.target.replicas
	d.reconcile(in, dec)
	d.expiredAwake(dec)
	d.recordScale(in.Now, before)
	dec.Recommended = d.recommendation
	dec.Desired = d.target.replicas
	dec.Panic = d.panicking
	dec.EBC = d.ebc
	dec.ActivatorInPath = d.target.activator
	dec.State = d.target.state
	dec.AtZero = d.atZero()
	dec.Parked = d.target.parked
	if d.learned != nil {
		d.learned.Decided(in.Now.Unix(), in.Ready, dec.Desired)
	}
}

// observe returns the stable and panic averages of the scaling metric, and
// false when the stable window holds no data. With target-burst-capacity -1
// pods are not scraped and an empty window simply averages 0.
func (d *Decider) observe(now time.Time) (stable, panicAvg float64, ok bool) {
	s, p := d.stableWin, d.panicWin
	if s.IsEmpty(now) && d.rev.TargetBurstCapacity != -1 {
		return 0, 0, false
	}
	if d.rev.Aggregation == config.AggregationWeightedExponential {
		return s.WeightedExponential(now), p.WeightedExponential(now), true
	}
	return s.Linear(now), p.Linear(now), true
}

// toInt32 rounds x with round and clamps it into int32; NaN is 0.
func toInt32(x float64, round func(float64) float64) int32 {
	x = round(x)
	switch {
	case math.IsNaN(x):
		return 0
	case x >= math.MaxInt32:
		return math.MaxInt32
	case x <= math.MinInt32:
		return math.MinInt32
	}
	return int32(x)
}

func ceil(x float64) float64  { return math.Ceil(x) }
func floor(x float64) float64 { return math.Floor(x) }
