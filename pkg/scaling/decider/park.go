package decider

import (
	"time"

	"ebb.dev/ebb/pkg/scaling/learned"
)

// Parking (config.Parking): where the decider would take the last replica
// away, a revision with parking enabled keeps it parked instead; and, since
// a wake costs milliseconds rather than a cold start, a revision that keeps
// one replica with no request in flight for the whole panic window is
// parked at once, seconds after its last request, rather than idling
// through the stable window and the grace period. The
// decision then asks for one replica (Desired 1, Parked), the revision
// stays inactive with the activator in the path, and the platform lowers
// the replica's resource requests in place; the activator forwards a
// request to it at once, since it is Ready. Any load wakes it: the
// recommendation is above 0 again, the count follows the KPA and the
// replica's requests go back to its template's. A revision parked for
// max-parked-duration goes to zero (ParkExpired), and a revision already
// at zero is never parked: parking keeps a replica that runs, it never
// starts one.
//
// With the learned scale-to-zero policy, the policy weighs a parked
// replica at parked-cost (pkg/scaling/learned/policy.go): it keeps one
// through every stretch of idle time whose gaps end often enough to pay
// for parked seconds, and the decider parks what it keeps as soon as an
// idle gap has begun (learned.MinGap seconds with no load), without
// waiting for the panic window: it wakes in milliseconds, and an awake
// replica costs 1/parked-cost times as much. A release parks the
// replica when the parked time until the next idle range worth one costs
// less than a cold start (cold-start-cost); else it goes to zero
// (ParkDeclined). A replica parked for max-parked-duration goes to zero
// (ParkExpired), and the policy weighs an awake replica until load comes.

// Reasons of parking.
const (
	// Parked: the last replica is parked instead of removed (A=seconds
	// parked, B=seconds left before it goes to zero, -1 for no limit).
	Parked Code = "Parked"
	// ParkExpired: parked for max-parked-duration; the replica is no
	// longer parked and the revision goes to zero, unless a rule keeps
	// the replica awake in the same decision (A=seconds parked,
	// B=max-parked-duration seconds, C=1 when it is kept awake, else 0:
	// expiredAwake).
	ParkExpired Code = "ParkExpired"
	// Unparked: load came for the parked replica; it wakes and the count
	// follows the KPA (A=seconds it was parked).
	Unparked Code = "Unparked"
	// ParkDeclined: the learned policy releases the replica to zero rather
	// than park it: the parked time until the next idle range worth a
	// replica (A seconds, -1 for none) at parked-cost B costs more than a
	// cold start (C seconds of an idle replica).
	ParkDeclined Code = "ParkDeclined"
	// ParkRefused: the platform cannot park the revision's replica (its
	// pod cannot be resized in place); parking is off for this decider and
	// the revision goes to zero as without it.
	ParkRefused Code = "ParkRefused"
	// ActivatorParked: the replica is parked, so requests go through the
	// activator: it forwards them to the replica at once and its load
	// wakes it.
	ActivatorParked Code = "ActivatorParked"
)

// RefuseParking turns parking off for the decider's life: the platform
// cannot park the revision's replica. A parked replica goes to zero at the
// next decision (ParkRefused). A new decider (a new configuration, an
// autoscaler restart) tries again.
func (d *Decider) RefuseParking() { d.parkRefused = true }

func parkMessage(r Reason) (string, bool) {
	switch r.Code {
	case Parked:
		secondsParked, secondsLeft := r.values[0], r.values[1]
		s := "parked: the last pod keeps running with its requests lowered, the activator in the path; parked for " + secs(secondsParked)
		if secondsLeft >= 0 {
			s += ", " + secs(secondsLeft) + " before it goes to zero (max-parked-duration)"
		}
		return s, true
	case ParkExpired:
		maxParkedSeconds, keptAwake := r.values[1], r.values[2]
		if keptAwake == 1 {
			return "parked for max-parked-duration (" + secs(maxParkedSeconds) + "): no longer parked; awake while the reasons after this " +
				"keep it, then to zero", true
		}
		return "parked for max-parked-duration (" + secs(maxParkedSeconds) + "): scaled to zero", true
	case Unparked:
		secondsParked := r.values[0]
		return "woken: load came for the pod parked for " + secs(secondsParked) + "; its requests go back to the template's", true
	case ActivatorParked:
		return "activator in the path: the pod is parked; the activator forwards the next request to it at once, and that load wakes it", true
	case ParkRefused:
		return "not parked: the platform cannot park the pod (see the revision's parking status): to zero as without parking", true
	case ParkDeclined:
		secondsUntil, parkedCost, coldStartSeconds := r.values[0], r.values[1], r.values[2]
		if secondsUntil < 0 {
			return "not parked: the learned policy expects no request worth a pod, so it goes to zero", true
		}
		return "not parked: " + secs(secondsUntil) + " parked until the next expected request at parked-cost " + num(parkedCost) +
			" costs more than a cold start (" + secs(coldStartSeconds) + "): to zero", true
	}
	return "", false
}

// canPark reports whether the replica that the decider would take away
// may be parked instead: parking is on, the platform has not refused it,
// and a replica runs (already parked, or asked for and ready). A parked
// replica whose parking was refused since is unparked here.
func (d *Decider) canPark(in Input, replicasBefore int32, dec *Decision) bool {
	t := &d.target
	if !d.rev.Parking.Enabled {
		return false
	}
	if d.parkRefused {
		if t.parked {
			dec.add(parkRefusedReason())
			t.parked, t.parkedSince = false, time.Time{}
		}
		return false
	}
	return t.parked || replicasBefore > 0 && in.Ready > 0 && !t.parkSpent
}

// quiet reports whether the decision saw no request in flight over the
// whole panic window.
func quiet(dec *Decision) bool { return dec.HasData && dec.PanicAverage == 0 }

// parkEarly parks the one replica of a revision that has had no request
// in flight for the panic window (or keeps it parked), and reports whether
// it did; load in the window clears a spent park (ParkExpired) so that the
// next quiet spell parks again.
func (d *Decider) parkEarly(in Input, before int32, dec *Decision) bool {
	if !quiet(dec) {
		d.target.parkSpent = false
		return false
	}
	if !d.canPark(in, before, dec) {
		return false
	}
	if d.park(in, dec) {
		return true
	}
	d.target.replicas = 1 // spent: awake until Knative's rules take it to zero
	return false
}

// park parks the last replica (or keeps it parked) at in.Now, and
// reports false when it has been parked for max-parked-duration: the
// caller then takes it to zero.
func (d *Decider) park(in Input, dec *Decision) bool {
	t := &d.target
	if !t.parked {
		t.parked, t.parkedSince = true, in.Now
	}
	parked := in.Now.Sub(t.parkedSince)
	limit := d.rev.Parking.MaxDuration
	if limit > 0 && parked >= limit {
		dec.add(parkExpiredReason(parked.Seconds(), limit.Seconds()))
		t.parked, t.parkedSince, t.parkSpent = false, time.Time{}, true
		return false
	}
	left := -1.0
	if limit > 0 {
		left = (limit - parked).Seconds()
	}
	dec.add(parkedReason(parked.Seconds(), left))
	t.replicas = 1
	return true
}

// expiredAwake marks the decision's ParkExpired (if any) as kept awake
// when the reconciled scale target still runs a replica that is not
// parked: a rule (the learned policy's KeepAlive, Knative's grace) kept
// the replica the park left, so the revision has not gone to zero yet.
func (d *Decider) expiredAwake(dec *Decision) {
	// A ParkExpired is given only as park spends the park (parkSpent), so
	// the decisions of a revision that never parked skip the reasons.
	if !d.target.parkSpent || d.target.replicas == 0 || d.target.parked {
		return
	}
	for _, r := range dec.Reasons() {
		if r.Code == ParkExpired {
			dec.add(parkExpiredAwakeReason(r.values[0], r.values[1]))
			return
		}
	}
}

// unpark wakes a parked replica: the count is about to follow the KPA.
func (d *Decider) unpark(in Input, dec *Decision) {
	t := &d.target
	if !t.parked {
		return
	}
	dec.add(unparkedReason(in.Now.Sub(t.parkedSince).Seconds()))
	t.parked, t.parkedSince = false, time.Time{}
}

// learnedPark applies parking to the learned policy's verdict v of n
// replicas (before is the count before it); it returns the count the
// revision should run (0: none, parked or not).
func (d *Decider) learnedPark(in Input, v learned.Verdict, n, before int32, dec *Decision) int32 {
	t := &d.target
	if !d.canPark(in, before, dec) {
		return n
	}
	if n > 0 {
		if !t.parked && !d.learnedIdle(in, dec) {
			return n // kept running with load: nothing to park
		}
		// A request is expected: the replica is parked (or stays so), as
		// it wakes in milliseconds. Past max-parked-duration it goes to
		// zero (ParkExpired); for the rest of the idle spell the policy
		// weighs an awake replica (parkSpent), which may pre-warm one.
		if d.park(in, dec) {
			return 0
		}
		t.replicas = 0
		return 0
	}
	if d.parkWorth(v, dec) && d.park(in, dec) {
		return 0
	}
	t.parked, t.parkedSince = false, time.Time{}
	t.replicas = 0
	return 0
}

// learnedIdle reports whether the replica the learned policy keeps may be
// parked now: an idle gap has begun (learned.MinGap seconds with no load),
// or no request was in flight over the panic window. An awake replica
// spares only the wake from parked (milliseconds, not a cold start) and
// costs 1/parked-cost times a parked one, so the policy keeps it awake
// only until the gap it would keep it for has begun.
func (d *Decider) learnedIdle(in Input, dec *Decision) bool {
	return quiet(dec) || dec.HasData && d.learned.IdleSeconds(in.Now) >= learned.MinGap
}

// parkWorth reports whether a released replica is worth parking: the
// parked time until the next idle range worth a replica (the release's A)
// at parked-cost costs less than a cold start.
func (d *Decider) parkWorth(v learned.Verdict, dec *Decision) bool {
	if v.Kind != learned.Release {
		return true // (a verdict that releases is a Release)
	}
	p, cost := d.rev.Parking, d.rev.ColdStartCost.Seconds()
	next := v.A
	ok := next >= 0 && next*p.Cost < cost && (p.MaxDuration == 0 || next <= p.MaxDuration.Seconds())
	if !ok {
		dec.add(parkDeclinedReason(next, p.Cost, cost))
	}
	return ok
}
