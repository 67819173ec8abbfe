package queueproxy

import (
	"context"
	"net"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/pkg/proxy/proxycore"
	"ebb.dev/ebb/pkg/stats"
)

// exchange is the state of one proxied request, pooled by the Proxy. It is
// owned by the request's handler goroutine, then, for a streamed response
// or a tunnel, by the goroutine that writes it (which ends it: the trip's
// Done).
//
// It is the queue-proxy's policy for the hop (proxycore.Policy: one
// upstream, the app; the request timeouts; accounting when the trip ends),
// and the context the breaker waits with: Done builds its channel and
// timer only when a request actually has to queue, so the common path
// allocates nothing.
type exchange struct {
	proxycore.Trip

	p        *proxy
	start    time.Time
	appStart time.Time // when it left the breaker for the app: start without a breaker
	via      stats.Arrival

	holdsSlot bool // a breaker slot is held; released by finish
	resent    bool // Retry let the request go once more

	requestDeadline time.Time // start + RequestTimeout
	headerDeadline  time.Time // first response byte due: min of the three timeouts

	slot slotWait // the breaker's wait
}

// newExchange is the pool's constructor.
func newExchange(p *proxy) *exchange {
	x := &exchange{p: p}
	x.Init(x, maxBufferedBody, &p.checks)
	x.Head.Want = [2]string{stats.ProbeHeaderName, stats.ProxyHeaderName}
	return x
}

// Upstream implements proxycore.Policy: the app, within the request's
// deadlines (the body's reads also within the idle timeout).
func (x *exchange) Upstream() (*fasthttp.HostClient, proxycore.Deadlines) {
	return x.p.app, proxycore.Deadlines{Write: x.requestDeadline, Head: x.headerDeadline, Body: x.requestDeadline,
		Idle: x.p.cfg.IdleTimeout}
}

// Retry implements proxycore.Policy (asked only when the retry rule lets
// the request go again): the app is the only upstream. After the hop's
// own second try failed too (it may have taken another pooled
// connection the app closed when it died, or one in the accept queue of
// an app that died), the pool's idle connections are closed and one
// more try, on a new connection, tells whether the app is gone: then
// the connect is refused, and the request is answered as one that never
// reached it (Proxy.appRefused), which the activator sends to another
// replica. A failed connect is never tried again here.
func (x *exchange) Retry(err error) error {
	if x.resent || proxycore.IsDialError(err) {
		return err
	}
	x.resent = true
	x.p.app.CloseIdleConnections()
	return nil
}

// OpenTunnel implements proxycore.Policy: a tunnel counts as in flight,
// holding its breaker slot, until it closes (Knative's way); the drain
// waits for it.
func (x *exchange) OpenTunnel(net.Conn) bool { return true }

// Done implements proxycore.Policy: a streamed answer or a tunnel ended.
func (x *exchange) Done(status int) { x.finish(x.p.now(), status, true) }

// slotWait is the context a request waits for a breaker slot with: it
// ends at the request's header deadline. Done builds its channel and timer
// only when the request actually has to queue, so the common path
// allocates nothing.
type slotWait struct {
	deadline time.Time
	wait     *waitState // non-nil once Done was called
}

// waitState is the lazily built part of the context: its own allocation, so
// a timer firing late never touches a recycled exchange.
type waitState struct {
	ch      chan struct{}
	timer   *time.Timer
	expired atomic.Bool
}

var _ context.Context = (*slotWait)(nil)

// Deadline is the latest time a queued request may still get a slot.
func (w *slotWait) Deadline() (time.Time, bool) { return w.deadline, true }

// Done returns a channel closed at the deadline.
func (w *slotWait) Done() <-chan struct{} {
	if w.wait == nil {
		ws := &waitState{ch: make(chan struct{})}
		ws.timer = time.AfterFunc(time.Until(w.deadline), func() {
			ws.expired.Store(true)
			close(ws.ch)
		})
		w.wait = ws
	}
	return w.wait.ch
}

// Err reports context.DeadlineExceeded once Done's channel is closed.
func (w *slotWait) Err() error {
	if w.wait != nil && w.wait.expired.Load() {
		return context.DeadlineExceeded
	}
	return nil
}

// Value carries nothing.
func (w *slotWait) Value(any) any { return nil }

// stop releases the timer, if Done built one.
func (w *slotWait) stop() {
	if w.wait != nil {
		w.wait.timer.Stop()
		w.wait = nil
	}
}

// reset prepares a pooled exchange for a request arriving at now.
func (x *exchange) reset(now time.Time, via stats.Arrival) {
	c := &x.p.cfg
	x.start, x.appStart, x.via, x.holdsSlot, x.resent = now, now, via, false, false
	x.requestDeadline = now.Add(c.RequestTimeout)
	x.headerDeadline = now.Add(x.p.headerBudget)
	x.slot.deadline = x.headerDeadline
}

// finish ends the exchange at now with the given status, answered by the
// app or not (the queue-proxy's own answer): accounting, breaker slot,
// latency, and back to the pool. x must not be used after.
func (x *exchange) finish(now time.Time, status int, app bool) {
	p := x.p
	p.acct.Out(now, x.via)
	p.open.Add(-1)
	if x.holdsSlot {
		p.breaker.Release()
	}
	p.metrics.observe(status, now.Sub(x.start))
	p.metrics.observeKnative(status, now, x.start, x.appStart, app)
	x.slot.stop()
	p.exchanges.Put(x)
}
