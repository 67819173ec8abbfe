package activator

import (
	"errors"
	"fmt"
	"time"

	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/pkg/podfailure"
	"ebb.dev/ebb/pkg/proxy/proxycore"
	"ebb.dev/ebb/pkg/stats"
)

// admit takes a slot on a replica, waiting if it must, then buffers the
// body. A waiting request holds only its head and what fasthttp read ahead
// of its body: the rest stays in the client's socket until a replica is
// free, so a refused request never cost its body's memory. admit reports
// false when it answered the request itself.
func (a *Activator) admit(ctx *fasthttp.RequestCtx, x *exchange) bool {
	x.sizeBody(&ctx.Request, a.opts.MaxBufferedBody)
	if x.r = x.rev.throttle.take(); x.r == nil {
		if err := a.queue(x); err != nil {
			a.reject(ctx, x, err)
			return false
		}
	}
	if err := x.bufferBody(&ctx.Request); err != nil {
		a.answer(ctx, x, resultBadRequest, fasthttp.StatusBadRequest,
			fmt.Appendf(nil, "activator: reading the request body: %v\n", err))
		return false
	}
	return true
}

// queue waits for a slot until the queue deadline; a revision with no
// replica at all pokes the autoscaler first. An error says why no slot
// came (reject words it).
func (a *Activator) queue(x *exchange) error {
	now := a.clock.Now()
	if len(x.rev.throttle.set.Load().replicas) == 0 {
		x.rev.m.heldAtZero(now)
		a.poke(x.rev, now)
	}
	t := a.timer(x.queueDeadline.Sub(now))
	// The client's cancel: an HTTP/2 stream's own; an HTTP/1.1 client's
	// connection is watched (clientWatch).
	gone, watched := (<-chan struct{})(x.gone), false
	if x.stream != nil {
		gone = x.stream.ClientGone()
	} else {
		watched = a.watch.add(x, x.client)
	}
	r, err := x.rev.throttle.wait(waitArgs{expire: t.C, gone: gone, cost: x.cost, deadline: x.deadline})
	if watched {
		a.watch.remove(x)
	}
	a.putTimer(t)
	done := a.clock.Now()
	x.waited += done.Sub(now)
	x.rev.m.queueWait.Observe(done.Sub(now).Seconds())
	if err == nil && watched && clientGone(x.client, make([]byte, 1)) {
		// Gone in the moment between the last check and the grant: the
		// slot goes to the next waiter, the app never sees the request.
		x.rev.throttle.release(r)
		err = errClientGone
	}
	if err != nil {
		return err
	}
	x.rev.m.dispatched(done)
	x.r, x.queued = r, true
	return nil
}

// isRejection reports whether err is one of the throttle's reasons for
// giving a request no replica.
func isRejection(err error) bool {
	var full *queueFullError
	var failing *revisionFailingError
	return errors.As(err, &full) || errors.As(err, &failing) || errors.Is(err, errQueueTimeout) || errors.Is(err, errRevisionGone) ||
		errors.Is(err, errClientGone) || errors.Is(err, errShuttingDown)
}

// reject answers a request that got no replica.
func (a *Activator) reject(ctx *fasthttp.RequestCtx, x *exchange, err error) {
	ctx.Response.Header.Set("Retry-After", "1")
	var full *queueFullError
	var failing *revisionFailingError
	switch {
	case errors.As(err, &failing):
		ctx.Response.Header.Set("Retry-After", failingRetryAfter)
		a.answer(ctx, x, resultRevisionFailing, fasthttp.StatusServiceUnavailable, fmt.Appendf(nil,
			"activator: %s\n", failingLine(x.rev.key, &failing.Failure)))
	case errors.As(err, &full):
		a.answer(ctx, x, resultQueueFull, fasthttp.StatusServiceUnavailable, fmt.Appendf(nil,
			"activator: revision %s: overloaded: the %s queue is full (%d %s waiting); retry later\n",
			x.rev.key, full.Scope, full.Limit, full.Bound))
	case errors.Is(err, errQueueTimeout):
		cfg := x.rev.cfg.Load()
		body := fmt.Appendf(nil, "activator: revision %s: no replica became available in time (queue timeout %v, request timeout %v)",
			x.rev.key, cfg.queueTimeout, cfg.timeout)
		if x.dialErr != nil {
			body = fmt.Appendf(body, "; the last replica tried, at %s, could not be reached: %v", x.dialAddr, x.dialErr)
		}
		a.answer(ctx, x, resultQueueTimeout, fasthttp.StatusGatewayTimeout, append(body, "; retry later\n"...))
	case errors.Is(err, errRevisionGone):
		a.answer(ctx, x, resultGone, fasthttp.StatusServiceUnavailable, fmt.Appendf(nil,
			"activator: revision %s was removed while the request waited\n", x.rev.key))
	case errors.Is(err, errClientGone):
		a.abandon(ctx, x)
	default:
		a.answer(ctx, x, resultShutdown, fasthttp.StatusServiceUnavailable,
			[]byte("activator: shutting down; retry on another activator\n"))
	}
}

// failingLine says why a revision's requests are answered 503: its pods
// cannot start, or (started, then failed) keep failing.
func failingLine(key string, f *podfailure.Failure) string {
	if f.AfterStart() {
		return "revision " + key + ": its pods keep failing: " + f.Message
	}
	return "revision " + key + " cannot start: " + f.Message
}

// failingRetryAfter is the Retry-After of an answer for a revision whose
// pods cannot start: a fix takes a while, and a client retrying every
// second only adds load.
const failingRetryAfter = "10"

// answer ends a request with the activator's own response; the client's
// body, if nobody read it, is settled first (proxycore.DiscardBody).
func (a *Activator) answer(ctx *fasthttp.RequestCtx, x *exchange, res result, status int, body []byte) {
	proxycore.DiscardBody(ctx)
	a.end(ctx, x, res, status, body)
}

// statusClientClosedRequest is nginx's status for a client that went away
// before its answer; nobody reads it, but logs and traces see it.
const statusClientClosedRequest = 499

// abandon ends a request whose client went away while it waited: nobody
// reads the answer, so the body is not skipped and the connection closes.
func (a *Activator) abandon(ctx *fasthttp.RequestCtx, x *exchange) {
	ctx.SetConnectionClose()
	a.end(ctx, x, resultClientGone, statusClientClosedRequest,
		[]byte("activator: the client went away while the request waited\n"))
}

// end sets the activator's own response, counts it and finishes x.
func (a *Activator) end(ctx *fasthttp.RequestCtx, x *exchange, res result, status int, body []byte) {
	ctx.Response.SetStatusCode(status)
	ctx.Response.Header.SetContentType("text/plain; charset=utf-8")
	ctx.Response.SetBodyRaw(body)
	a.metrics.results[res].Inc()
	x.rev.m.results[res].Inc()
	x.status = status
	x.finish()
}

// poke wakes the autoscaler for a revision with no replica, at most once
// per reporting period per revision.
func (a *Activator) poke(rev *revision, now time.Time) {
	last := rev.lastPoke.Load()
	if now.UnixNano()-last < int64(a.opts.ReportPeriod) || !rev.lastPoke.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	rev.pokes.Add(1)
	a.metrics.pokes.Inc()
	a.stats.Poke(stats.Stat{
		Source: stats.SourceActivator, PodName: a.opts.PodName, Revision: rev.key,
		Time: now, ProcessUptime: now.Sub(a.started), AverageConcurrency: 1, RequestCount: 1,
	})
}

func (a *Activator) timer(d time.Duration) *time.Timer {
	if t, ok := a.timers.Get().(*time.Timer); ok {
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

// putTimer stops t and keeps it; since Go 1.23 a stopped timer's channel
// holds no stale tick.
func (a *Activator) putTimer(t *time.Timer) {
	t.Stop()
	a.timers.Put(t)
}
