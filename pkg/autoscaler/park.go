package autoscaler

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/scaling/decider"
)

// Parker is an optional extension of Platform for platforms that can park
// a revision's one replica (decider.Decision.Parked): keep it running and
// Ready with its resource requests lowered in place (Kubernetes: the pod's
// resize subresource), and wake it (the requests back to its template's).
// Requests reach a parked replica through the activator all along: Park
// never makes them wait.
type Parker interface {
	// Park parks (true) or wakes (false) the revision's replica. An error
	// wrapping ErrParkRefused says the platform cannot park it (its pod
	// cannot be resized in place, the feature is off): the autoscaler then
	// takes the revision to zero and does not ask again for its decider's
	// life. Other errors are retried with the next decision.
	Park(ctx context.Context, rev RevisionKey, req ParkRequest) error
}

// ParkRequest is what Park is asked: park (Parked, with the revision's
// parked requests) or wake (the requests back to the pod's own).
type ParkRequest struct {
	Parked bool
	// CPURequestMilli is each container's CPU request while parked;
	// MemoryRequestBytes the floor of its memory request, which never goes
	// below what the container uses (config.Parking).
	CPURequestMilli, MemoryRequestBytes int64
}

// ParkRefiner is an optional extension of Parker for platforms whose park
// can be left partial (Kubernetes: a memory request kept as asked for want
// of a usage to lower it to): while the revision stays parked, the
// autoscaler calls Park again whenever ParkIncomplete says a retry is
// due, and Park finishes what it can. ParkIncomplete must be cheap (no
// I/O): it is asked at every decision while parked.
type ParkRefiner interface {
	ParkIncomplete(rev RevisionKey) bool
}

// ErrParkRefused: the platform cannot park the revision's replica.
var ErrParkRefused = errors.New("parking refused")

// ParkReporter is an optional extension of Platform for platforms that
// see how a parked (or waking) replica's resize goes: the revision's
// status (the API, `autoscaler status`, explain) shows it.
type ParkReporter interface {
	ParkStatus(rev RevisionKey) (ParkStatus, bool)
}

// ParkStatus is what the platform says of a revision's parking: its state
// (ParkStateParked, ParkStateWaking, ParkStateRefused, ParkStatePending),
// a machine-readable reason and a sentence.
type ParkStatus struct {
	State   string `json:"state"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// States of ParkStatus.
const (
	// ParkStateParked: the replica runs with its parked requests.
	ParkStateParked = "parked"
	// ParkStateWaking: the resize back to the template's requests is
	// written and not done yet; the replica serves meanwhile.
	ParkStateWaking = "waking"
	// ParkStatePending: the node has not taken a resize (Deferred,
	// Infeasible); the replica serves and the revision scales out as
	// decided.
	ParkStatePending = "pending"
	// ParkStateRefused: the platform cannot park the replica; the
	// revision goes to zero instead.
	ParkStateRefused = "refused"
)

// Where a wake comes from (the metrics' label "from").
const (
	wakeFromParked = "parked"
	wakeFromZero   = "zero"
)

// parker is the platform's Parker; nil when it has none.
func (r *revision) parker() Parker {
	p, _ := r.deps.platform.(Parker)
	return p
}

// unpark wakes the parked replica before a decision that is not parked
// is applied (unless it takes the revision to zero: that pod goes). A
// failure leaves it to the next decision and never holds the scale: the
// replica serves while parked.
//
// Before the first decision applied (a new decider after an autoscaler
// restart, or after a failed apply) the platform may hold a replica this
// process never parked: it is woken too (Park with nothing parked does
// nothing).
func (r *revision) unpark(ctx context.Context, dec *decider.Decision) {
	a := &r.applied
	if (!a.parked && a.known) || dec.Parked {
		return
	}
	p := r.parker()
	if p == nil || dec.Desired == 0 {
		a.parked = false
		return
	}
	if !a.parked { // not parked by this process: nothing to time or count
		if err := p.Park(ctx, r.key, ParkRequest{}); err != nil {
			r.log().Warn("waking a replica parked before failed; it serves meanwhile, retrying with the next decision", zap.Error(err))
		}
		return
	}
	began := r.deps.clock.Now()
	if err := p.Park(ctx, r.key, ParkRequest{}); err != nil {
		r.log().Warn("waking the parked replica failed; it serves meanwhile, retrying with the next decision", zap.Error(err))
		return
	}
	a.parked = false
	took := r.deps.clock.Now().Sub(began)
	r.deps.metrics.woke(wakeFromParked, took)
	r.log().Info("woke the parked replica", zap.Duration("took", took), zap.Int32("desired", dec.Desired))
}

// park parks the replica after a parked decision was applied (its one
// replica scaled). A refusal turns parking off for the decider, which
// takes the revision to zero at its next decision.
func (r *revision) park(ctx context.Context, dec *decider.Decision) {
	a := &r.applied
	if !dec.Parked {
		return
	}
	pk := r.cfg.rev.Parking
	if a.parked {
		if rf, ok := r.deps.platform.(ParkRefiner); ok && rf.ParkIncomplete(r.key) {
			req := ParkRequest{Parked: true, CPURequestMilli: pk.CPURequestMilli, MemoryRequestBytes: pk.MemoryRequestBytes}
			if err := r.parker().Park(ctx, r.key, req); err != nil {
				r.log().Warn("finishing the park failed; the replica stays parked, retrying later", zap.Error(err))
			}
		}
		return
	}
	p := r.parker()
	if p == nil {
		r.refuseParking(errors.New("the platform has no way to park a replica"))
		return
	}
	err := p.Park(ctx, r.key, ParkRequest{Parked: true, CPURequestMilli: pk.CPURequestMilli, MemoryRequestBytes: pk.MemoryRequestBytes})
	switch {
	case errors.Is(err, ErrParkRefused):
		r.refuseParking(err)
	case err != nil:
		r.log().Warn("parking failed; retrying with the next decision", zap.Error(err))
	default:
		a.parked = true
		r.log().Info("parked the revision's replica")
	}
}

// refuseParking turns parking off for the revision's decider.
func (r *revision) refuseParking(err error) {
	if st := r.loop.Stepper; st != nil {
		if d := st.Decider(); d != nil {
			d.RefuseParking()
		}
	}
	r.log().Warn("parking refused: the revision goes to zero instead", zap.Error(err))
}

// wakeWatch times a wake from zero: from the decision that asked for
// replicas again to the first second with one ready (to the second: the
// autoscaler reads the ready count once a second).
type wakeWatch struct {
	since time.Time // zero: no wake from zero under way
}

// scaled notes a scale from..to applied at now.
func (w *wakeWatch) scaled(from, to int32, now time.Time) {
	switch {
	case from == 0 && to > 0:
		w.since = now
	case to == 0:
		w.since = time.Time{}
	}
}

// ready observes the ready count; it returns how long the wake took
// when this is its end. The clock is read then only (a decision of a
// revision not waking reads none).
func (w *wakeWatch) ready(ready int32, c Clock) (time.Duration, bool) {
	if w.since.IsZero() || ready == 0 {
		return 0, false
	}
	d := c.Now().Sub(w.since)
	w.since = time.Time{}
	return d, true
}
