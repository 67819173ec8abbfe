package decider

import (
	"time"

	"ebb.dev/ebb/pkg/config"
)

// Inactive reasons (Knative's PA Active=False reasons).
const (
	reasonNoTraffic = "NoTraffic"
	reasonTimedOut  = "TimedOut"
	reasonQueued    = "Queued"
)

// maxPasses bounds the reconcile loop. Each pass can only move the state
// forward (a state change, the activator, a replica count), so it settles in
// a few passes; the bound guards against a bug turning into a hang.
const maxPasses = 8

// targetState is the scale target and its routing, as Knative's KPA
// reconciler keeps them in the PodAutoscaler and ServerlessService status.
type targetState struct {
	state          State
	since          time.Time // when state (or the inactive reason) last changed
	inactiveReason string
	initialized    bool // initial scale was reached once
	replicas       int32
	activator      bool
	activatorSince time.Time
	// parked: the one replica is parked (park.go) since parkedSince;
	// parkSpent: it was parked for max-parked-duration, and is not parked
	// again before load comes.
	parked, parkSpent bool
	parkedSince       time.Time
}

func newTargetState(rev *config.Revision, now time.Time) targetState {
	return targetState{
		state:          activating,
		since:          now,
		replicas:       rev.InitialReplicas,
		activator:      true,
		activatorSince: now,
	}
}

// inactiveTargetState is the scale target of a revision already at zero
// when its decider starts (StepperOptions.Inactive).
func inactiveTargetState(now time.Time) targetState {
	return targetState{
		state:          inactive,
		since:          now,
		inactiveReason: reasonNoTraffic,
		initialized:    true,
		activator:      true,
		activatorSince: now,
	}
}

// reconcile applies the recommendation to the scale target (scenario spec
// "Scale target and activator"), repeating until nothing changes, as Knative
// reconciles again as soon as it changes its own status.
func (d *Decider) reconcile(in Input, dec *Decision) {
	mark := dec.nReasons
	for pass := range maxPasses {
		if pass > 0 {
			// A new pass speaks for the scale target; keep only what the
			// earlier passes changed (state transitions and their causes).
			dec.keepFrom(mark, StateChanged, Deactivated, ActivationTimeout, Unparked, ParkExpired, ParkDeclined, ParkRefused)
		}
		before := d.target
		want := d.scale(in, dec)
		d.route(want, in, dec)
		d.updateState(want, in, dec)
		if d.target == before {
			return
		}
	}
}

// bounds returns min-scale (0 when unreachable) and max-scale.
func (d *Decider) bounds(reachable bool) (lo, hi int32) {
	lo, hi = d.rev.MinScale, d.rev.MaxScale
	if !reachable {
		lo = 0
	}
	return lo, hi
}

// scale is step 1: bound the recommendation and apply it, or hand a zero
// to the scale-to-zero rules. It returns want: the count the revision
// should run, 0 for none, -1 for unknown.
func (d *Decider) scale(in Input, dec *Decision) int32 {
	rec, t := d.recommendation, &d.target
	if rec < 0 && t.state != activating {
		dec.add(noMetricsYetReason())
		return rec
	}
	lo, hi := d.bounds(in.Reachable)
	code := MinScale
	if is := d.rev.InitialScale; !t.initialized && in.Reachable && is > 1 && is > lo {
		lo, code = is, InitialScale
	}
	x := rec
	switch {
	case rec < lo:
		x = lo
		if lo > 0 {
			if code == InitialScale {
				dec.add(initialScaleReason(float64(max(rec, 0)), float64(lo)))
			} else {
				dec.add(minScaleReason(float64(max(rec, 0)), float64(lo)))
			}
		}
	case hi != 0 && rec > hi:
		x = hi
		dec.add(maxScaleReason(float64(rec), float64(hi)))
	}
	before := t.replicas
	if d.learned != nil && x <= 1 && lo == 0 && rec >= 0 && d.rev.EnableScaleToZero {
		if v, n, ok := d.learnedScale(in, dec); ok {
			return d.learnedPark(in, v, n, before, dec)
		}
	}
	if x == 1 && lo == 0 && rec >= 0 && d.rev.EnableScaleToZero && d.parkEarly(in, before, dec) {
		return 0
	}
	if x != 0 {
		d.unpark(in, dec)
		t.replicas = x
		return x
	}
	return d.scaleToZero(in, before, dec)
}

// scaleToZero decides what a bounded recommendation of 0 means, by state.
func (d *Decider) scaleToZero(in Input, before int32, dec *Decision) int32 {
	rev, t := d.rev, &d.target
	if !rev.EnableScaleToZero {
		dec.add(scaleToZeroDisabledReason())
		t.replicas = 1
		return 1
	}
	elapsed := in.Now.Sub(t.since)
	switch t.state {
	case activating:
		timeout := rev.ProgressDeadline + activationTimeoutBuffer
		if elapsed > timeout {
			dec.add(activationTimeoutReason(timeout.Seconds()))
			t.replicas = 0
			return 0
		}
		dec.add(awaitingActivationReason((timeout - elapsed).Seconds()))
		return -1
	case active:
		if elapsed >= rev.StableWindow {
			dec.add(deactivatedReason(rev.StableWindow.Seconds()))
			return 0
		}
		dec.add(stableWindowHoldReason((rev.StableWindow - elapsed).Seconds()))
		t.replicas = 1
		return 1
	}
	return d.scaleToZeroInactive(in, elapsed, before, dec)
}

// scaleToZeroInactive: an inactive revision goes to zero once it has been
// inactive for max(grace, retention), or once retention has passed and the
// activator has been in the path for the grace period; with parking its
// last replica is parked instead (park.go).
func (d *Decider) scaleToZeroInactive(in Input, inactive time.Duration, before int32, dec *Decision) int32 {
	rev, t := d.rev, &d.target
	retention := rev.ScaleToZeroPodRetentionPeriod
	if !in.Reachable {
		retention = 0
	}
	grace := rev.ScaleToZeroGracePeriod
	var proxied time.Duration
	if t.activator {
		proxied = in.Now.Sub(t.activatorSince)
	}
	switch {
	case inactive >= max(grace, retention), proxied >= grace && inactive >= retention:
		if d.canPark(in, before, dec) {
			dec.drop(GracePeriod)
			dec.drop(PodRetention)
			if d.park(in, dec) {
				return 0
			}
		}
		dec.add(scaledToZeroReason(inactive.Seconds(), proxied.Seconds()))
		dec.drop(GracePeriod)
		dec.drop(PodRetention)
		t.replicas = 0
	case inactive < retention:
		dec.add(podRetentionReason((retention - inactive).Seconds()))
	default:
		dec.add(gracePeriodReason(proxied.Seconds(), grace.Seconds()))
	}
	return 0
}

// route is step 2: the activator is in the path unless the revision should
// run pods and has spare burst capacity; always when no pod is ready.
func (d *Decider) route(want int32, in Input, dec *Decision) {
	t := &d.target
	inPath := true
	switch {
	case in.Ready == 0:
		dec.add(activatorNoReadyPodsReason())
	case t.parked:
		dec.add(activatorParkedReason())
	case want <= 0:
		dec.add(activatorScaleUnknownReason(float64(want)))
	case d.ebc < 0:
		dec.add(activatorBurstCapacityReason(float64(d.ebc), d.rev.TargetBurstCapacity))
	default:
		inPath = false
		dec.add(activatorOutOfPathReason(float64(d.ebc)))
	}
	if inPath != t.activator {
		t.activator, t.activatorSince = inPath, in.Now
	}
}

// updateState is step 3: the PA Active condition from want and the ready
// pods against the minimum (Knative computeActiveCondition).
func (d *Decider) updateState(want int32, in Input, dec *Decision) {
	t := &d.target
	lo, _ := d.bounds(in.Reachable)
	minReady := max(lo, 1)
	if !t.initialized {
		minReady = max(lo, d.rev.InitialScale)
	}
	if in.Ready >= minReady {
		t.initialized = true
	}
	switch {
	case want == 0 || minReady == 0:
		reason := reasonNoTraffic
		if t.state == activating && minReady > 0 {
			reason = reasonTimedOut
		}
		d.mark(inactive, reason, in.Now, dec)
	case in.Ready < minReady:
		if want > 0 || t.state != inactive {
			d.mark(activating, reasonQueued, in.Now, dec)
		} else {
			d.mark(inactive, reasonNoTraffic, in.Now, dec)
		}
	case want > 0 || t.state != inactive:
		d.mark(active, "", in.Now, dec)
	}
}

// mark moves the state; its time moves only when the state, or an inactive
// revision's reason, changes.
func (d *Decider) mark(s State, reason string, now time.Time, dec *Decision) {
	t := &d.target
	if t.state == s && (s != inactive || t.inactiveReason == reason) {
		return
	}
	t.state, t.since = s, now
	t.inactiveReason = ""
	if s == inactive {
		t.inactiveReason = reason
	}
	dec.add(stateChangedReason(s, reason))
}
