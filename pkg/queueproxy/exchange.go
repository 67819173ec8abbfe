package queueproxy

import (
	"context"
	"sync/atomic"
	"time"

	"ebb.dev/ebb/pkg/proxycore"
	"ebb.dev/ebb/pkg/stats"
)

// exchange is the state of one proxied request, pooled by the Proxy. It is
// owned by the request's handler goroutine, then, for a streamed response,
// by the goroutine that writes the body (which ends it in bodyStream.Close).
//
// It is also the context the breaker waits with: Done builds its channel and
// timer only when a request actually has to queue, so the common path
// allocates nothing.
type exchange struct {
	p     *Proxy
	start time.Time
	via   stats.Arrival

	holdsSlot bool // a breaker slot is held; released by finish

	requestDeadline time.Time // start + RequestTimeout
	headerDeadline  time.Time // first response byte due: min of the three timeouts

	wait *waitState // non-nil once Done was called

	out proxycore.Outbound // the request on its way: what the retry rule knows
}

// waitState is the lazily built part of the context: its own allocation, so
// a timer firing late never touches a recycled exchange.
type waitState struct {
	ch      chan struct{}
	timer   *time.Timer
	expired atomic.Bool
}

var _ context.Context = (*exchange)(nil)

// Deadline is the latest time a queued request may still get a slot.
func (x *exchange) Deadline() (time.Time, bool) { return x.headerDeadline, true }

// Done returns a channel closed at the header deadline.
func (x *exchange) Done() <-chan struct{} {
	if x.wait == nil {
		w := &waitState{ch: make(chan struct{})}
		w.timer = time.AfterFunc(time.Until(x.headerDeadline), func() {
			w.expired.Store(true)
			close(w.ch)
		})
		x.wait = w
	}
	return x.wait.ch
}

// Err reports context.DeadlineExceeded once Done's channel is closed.
func (x *exchange) Err() error {
	if x.wait != nil && x.wait.expired.Load() {
		return context.DeadlineExceeded
	}
	return nil
}

// Value carries nothing.
func (x *exchange) Value(any) any { return nil }

// reset prepares a pooled exchange for a request arriving at now.
func (x *exchange) reset(now time.Time, via stats.Arrival) {
	c := &x.p.cfg
	x.start, x.via, x.holdsSlot = now, via, false
	x.requestDeadline = now.Add(c.RequestTimeout)
	x.headerDeadline = now.Add(x.p.headerBudget)
}

// bodyDeadline is the read deadline for the next piece of the body: the
// request deadline, or sooner when an idle timeout is set.
func (x *exchange) bodyDeadline(now time.Time) time.Time {
	if idle := x.p.cfg.IdleTimeout; idle > 0 {
		if d := now.Add(idle); d.Before(x.requestDeadline) {
			return d
		}
	}
	return x.requestDeadline
}

// finish ends the exchange at now with the given status: accounting,
// breaker slot, latency, and back to the pool. x must not be used after.
func (x *exchange) finish(now time.Time, status int) {
	p := x.p
	p.acct.Out(now, x.via)
	p.open.Add(-1)
	if x.holdsSlot {
		p.breaker.Release()
	}
	p.metrics.observe(status, now.Sub(x.start))
	if x.wait != nil {
		x.wait.timer.Stop()
		x.wait = nil
	}
	p.exchanges.Put(x)
}
