package activator

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"time"

	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/pkg/proxycore"
	"ebb.dev/ebb/pkg/stats"
)

// RevisionHeader names the revision ("namespace/name") explicitly,
// bypassing the Host header; tests and tools use it. It is honoured only
// with Options.RevisionHeader, and never forwarded.
const RevisionHeader = "Ebb-Revision"

// prefetchCost is the most a waiting request holds of its body: fasthttp
// reads at most this much ahead; the rest waits in the socket.
const prefetchCost = 8 << 10

// keptBodyBuffer is the largest body buffer a pooled exchange keeps.
const keptBodyBuffer = 16 << 10

// serve is the activator's fasthttp handler.
func (a *Activator) serve(ctx *fasthttp.RequestCtx) {
	ambiguous := proxycore.AmbiguousFraming(&ctx.Request.Header)
	a.serveRequest(ctx)
	if ambiguous {
		ctx.SetConnectionClose() // RFC 9112 §6.1: answer, then close
	}
}

func (a *Activator) serveRequest(ctx *fasthttp.RequestCtx) {
	if len(ctx.Request.Header.Peek(stats.ProbeHeaderName)) > 0 {
		a.answerProbe(ctx)
		return
	}
	if ctx.Request.Header.ConnectionUpgrade() && a.h2s.up.Take(ctx) {
		return // now an HTTP/2 connection (h2.go): its streams are the requests
	}
	if !a.targetAgrees(ctx) {
		return
	}
	x := a.exchanges.Get().(*exchange)
	rev, miss := a.route(ctx, x)
	if rev == nil {
		a.noRoute(ctx, x, miss)
		a.exchanges.Put(x)
		return
	}
	x.begin(rev, a.clock.Now())
	if a.admit(ctx, x) {
		a.forward(ctx, x)
	}
}

// route finds the revision of a request, or nil and why: the key it
// looked for is left in x.scratch.
func (a *Activator) route(ctx *fasthttp.RequestCtx, x *exchange) (*revision, routeMiss) {
	h := &ctx.Request.Header
	return a.routeBy(h.Peek(RevisionHeader), h.Host(), x)
}

// routeBy is route on the request's Ebb-Revision header (empty when
// absent) and Host, for both protocols.
func (a *Activator) routeBy(revHeader, host []byte, x *exchange) (*revision, routeMiss) {
	t := a.routes.Load()
	if len(revHeader) > 0 && a.opts.RevisionHeader {
		x.scratch = appendLower(x.scratch[:0], revHeader)
	} else {
		key, ok := a.opts.Hosts.AppendKey(x.scratch[:0], host)
		x.scratch = key
		if !ok {
			return nil, missHost
		}
	}
	if !a.nss.allows(x.scratch) {
		return nil, missNamespace
	}
	if rev := t.byKey[string(x.scratch)]; rev != nil {
		return rev, missNone
	}
	return nil, missRevision
}

// admit takes a slot on a replica, waiting if it must, then buffers the
// body. A waiting request holds only what fasthttp read ahead of its body:
// the rest stays in the client's socket until a replica is free, so a
// refused request never cost its body's memory. admit reports false when
// it answered the request itself.
func (a *Activator) admit(ctx *fasthttp.RequestCtx, x *exchange) bool {
	x.sizeBody(&ctx.Request, a.opts.MaxBufferedBody)
	if x.r = x.rev.throttle.take(); x.r == nil && !a.queue(ctx, x) {
		return false
	}
	if err := x.bufferBody(&ctx.Request); err != nil {
		a.answer(ctx, x, resultBadRequest, fasthttp.StatusBadRequest,
			fmt.Appendf(nil, "activator: reading the request body: %v\n", err))
		return false
	}
	return true
}

// queue waits for a slot until the queue deadline; a revision with no
// replica at all pokes the autoscaler first.
func (a *Activator) queue(ctx *fasthttp.RequestCtx, x *exchange) bool {
	now := a.clock.Now()
	if len(x.rev.throttle.set.Load().replicas) == 0 {
		x.rev.m.heldAtZero(now)
		a.poke(x.rev, now)
	}
	t := a.timer(x.queueDeadline.Sub(now))
	watched := a.watch.add(x, ctx.Conn())
	r, err := x.rev.throttle.wait(waitArgs{expire: t.C, gone: x.gone, cost: x.cost, deadline: x.deadline})
	if watched {
		a.watch.remove(x)
	}
	a.putTimer(t)
	done := a.clock.Now()
	x.rev.m.queueWait.Observe(done.Sub(now).Seconds())
	if err == nil && watched && clientGone(ctx.Conn(), make([]byte, 1)) {
		// Gone in the moment between the last check and the grant: the
		// slot goes to the next waiter, the app never sees the request.
		x.rev.throttle.release(r)
		err = ErrClientGone
	}
	if err != nil {
		a.reject(ctx, x, err)
		return false
	}
	x.rev.m.dispatched(done)
	x.r, x.queued = r, true
	return true
}

// reject answers a request that got no replica.
func (a *Activator) reject(ctx *fasthttp.RequestCtx, x *exchange, err error) {
	ctx.Response.Header.Set("Retry-After", "1")
	var full *QueueFullError
	switch {
	case errors.As(err, &full):
		a.answer(ctx, x, resultQueueFull, fasthttp.StatusServiceUnavailable, fmt.Appendf(nil,
			"activator: revision %s: overloaded: the %s queue is full (%d %s waiting); retry later\n",
			x.rev.key, full.Scope, full.Limit, full.Bound))
	case errors.Is(err, ErrQueueTimeout):
		cfg := x.rev.cfg.Load()
		body := fmt.Appendf(nil, "activator: revision %s: no replica became available in time (queue timeout %v, request timeout %v)",
			x.rev.key, cfg.queueTimeout, cfg.timeout)
		if x.dialErr != nil {
			body = fmt.Appendf(body, "; the last replica tried, at %s, could not be reached: %v", x.dialAddr, x.dialErr)
		}
		a.answer(ctx, x, resultQueueTimeout, fasthttp.StatusGatewayTimeout, append(body, "; retry later\n"...))
	case errors.Is(err, ErrRevisionGone):
		a.answer(ctx, x, resultGone, fasthttp.StatusServiceUnavailable, fmt.Appendf(nil,
			"activator: revision %s was removed while the request waited\n", x.rev.key))
	case errors.Is(err, ErrClientGone):
		a.abandon(ctx, x)
	default:
		a.answer(ctx, x, resultShutdown, fasthttp.StatusServiceUnavailable,
			[]byte("activator: shutting down; retry on another activator\n"))
	}
}

// answer ends a request with the activator's own response.
func (a *Activator) answer(ctx *fasthttp.RequestCtx, x *exchange, res result, status int, body []byte) {
	discardBody(ctx)
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
	x.finish()
}

func (a *Activator) noRoute(ctx *fasthttp.RequestCtx, x *exchange, miss routeMiss) {
	h := &ctx.Request.Header
	var body []byte
	switch {
	case miss == missNamespace:
		body = fmt.Appendf(nil, "activator: namespace of %q is not served by this activator (it serves %s)\n",
			x.scratch, a.nss)
	case miss == missRevision && a.opts.RevisionHeader && len(h.Peek(RevisionHeader)) > 0:
		body = fmt.Appendf(nil, "activator: no revision %q (from the %s header)\n", x.scratch, RevisionHeader)
	case miss == missRevision:
		body = fmt.Appendf(nil, "activator: no revision %s (host %q)\n", x.scratch, h.Host())
	default:
		body = fmt.Appendf(nil, "activator: host %q names no revision; use NAME.NAMESPACE, NAME.NAMESPACE.svc, "+
			"NAME.NAMESPACE.svc.%s%s%s\n", h.Host(), a.opts.Hosts.ClusterDomain, localHint(&a.opts.Hosts), a.revisionHeaderHint())
	}
	discardBody(ctx)
	ctx.Response.SetStatusCode(fasthttp.StatusNotFound)
	ctx.Response.Header.SetContentType("text/plain; charset=utf-8")
	ctx.Response.SetBodyRaw(body)
	a.metrics.results[resultNoRevision].Inc()
}

func localHint(hr *HostRules) string {
	if hr.LocalDomain == "" {
		return ""
	}
	return ", NAME." + hr.LocalDomain
}

// answerProbe answers K-Network-Probe (any value) with the activator's
// name, as Knative's activator does, or 503 while it is not ready.
func (a *Activator) answerProbe(ctx *fasthttp.RequestCtx) {
	ctx.Response.Header.SetContentType("text/plain; charset=utf-8")
	if a.Ready() {
		ctx.Response.SetBodyString("activator")
		return
	}
	ctx.Response.SetStatusCode(fasthttp.StatusServiceUnavailable)
	ctx.Response.SetBodyString("activator: not ready\n")
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

// exchange is one request's state from admission to the end of its
// response, pooled. For a streamed response it is the body stream handed
// to fasthttp, and its CloseWithError ends the request.
type exchange struct {
	a             *Activator
	rev           *revision
	r             *replica // the slot held, or nil
	start         time.Time
	deadline      time.Time // start + the revision's timeout
	queueDeadline time.Time
	cost          int64                  // bytes held while queued
	buffer        bool                   // the request body is read whole once a replica is free
	queued        bool                   // the request waited for its replica
	respBody      proxycore.ResponseBody // the replica's streamed response body
	releaseConn   func(complete bool)    // set while a streamed body holds the replica's connection
	out           proxycore.Outbound     // the request on its way: what the retry rule knows
	scratch       []byte
	body          []byte // the buffered request body

	// While the request waits in a queue, its client's connection is
	// watched (clientWatch); the watch fields are guarded by clientWatch.mu.
	conn     net.Conn
	watchIdx int           // in clientWatch.waiting; -1: not watched
	watchGen uint64        // counts the watches of this exchange
	gone     chan struct{} // capacity 1: the client went away

	// The last replica that could not be reached, and why: a request that
	// then times out in the queue says so.
	dialErr  error
	dialAddr string
}

func (x *exchange) begin(rev *revision, now time.Time) {
	cfg := rev.cfg.Load()
	x.rev, x.start, x.queued = rev, now, false
	x.dialErr, x.dialAddr = nil, ""
	x.deadline = now.Add(cfg.timeout)
	x.queueDeadline = now.Add(cfg.queueTimeout)
	x.a.open.Add(1)
	rev.acct.In(now, stats.Direct)
}

// sizeBody decides how the body travels and what the request holds while
// it waits: a body of known length up to limit is buffered (so an
// idempotent request can be retried: the retry rule, x.out), larger and
// chunked bodies stream through.
func (x *exchange) sizeBody(req *fasthttp.Request, limit int) {
	x.buffer = false
	if !req.IsBodyStream() {
		x.cost = int64(len(req.Body()))
		return
	}
	cl := req.Header.ContentLength()
	x.cost = int64(min(max(cl, 0), prefetchCost))
	x.buffer = cl >= 0 && cl <= limit
}

// bufferBody reads a body sizeBody chose to buffer.
func (x *exchange) bufferBody(req *fasthttp.Request) error {
	if !x.buffer {
		return nil
	}
	cl := req.Header.ContentLength()
	x.body = slices.Grow(x.body[:0], cl)[:cl]
	if n, err := io.ReadFull(req.BodyStream(), x.body); err != nil {
		return fmt.Errorf("got %d of %d bytes: %w", n, cl, err)
	}
	req.SetBodyRaw(x.body)
	return nil
}

// finish ends the request: the slot goes back, the accounting closes, the
// exchange returns to the pool.
func (x *exchange) finish() {
	a, rev := x.a, x.rev
	if x.r != nil {
		rev.throttle.release(x.r)
	}
	rev.acct.Out(a.clock.Now(), stats.Direct)
	if x.releaseConn != nil { // the stream never started (the answer was replaced)
		x.releaseConn(false)
		x.releaseConn = nil
	}
	x.respBody.Reset(nil, 0)
	if cap(x.body) > keptBodyBuffer {
		x.body = nil // pooled exchanges keep small buffers only
	}
	x.rev, x.r, x.dialErr = nil, nil, nil
	a.open.Add(-1)
	a.exchanges.Put(x)
}

// Limits of discardBody.
const (
	maxDiscard     = 256 << 10 // as net/http: a larger unread body closes the connection
	discardTimeout = time.Second
)

// discardBody reads what is left of a request body the activator answers
// without forwarding, so the connection can carry the next request and
// the client reads the answer instead of a reset. fasthttp would parse an
// unread body as the next request. A body too long (or too slow) to skip
// closes the connection after the answer instead.
func discardBody(ctx *fasthttp.RequestCtx) {
	req := &ctx.Request
	if !req.IsBodyStream() {
		return
	}
	if cl := req.Header.ContentLength(); cl > maxDiscard {
		ctx.SetConnectionClose()
		return
	}
	conn := ctx.Conn()
	if err := conn.SetReadDeadline(time.Now().Add(discardTimeout)); err != nil {
		ctx.SetConnectionClose()
		return
	}
	n, err := io.CopyN(io.Discard, req.BodyStream(), maxDiscard+1)
	if !errors.Is(err, io.EOF) || n > maxDiscard {
		ctx.SetConnectionClose()
	}
	conn.SetReadDeadline(time.Time{}) // the server sets its own before the next read
}
