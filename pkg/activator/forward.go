package activator

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/proxycore"
	"ebb.dev/ebb/pkg/stats"
)

// maxBufferedResponse is the largest response body (with a
// Content-Length) read whole, releasing the replica's connection at once;
// larger, chunked and close-delimited bodies stream to the client.
const maxBufferedResponse = 16 << 10

// forward sends the request to the replica it holds a slot on, trying
// another replica after a connection error when the retry rule allows
// (proxycore.Outbound.MaySendAgain: nothing of the request was written, or
// it is idempotent with its body in memory), and sets the response.
//
// A dial error (refused, no route, dial timeout) means nothing was sent,
// so it is always safe to try again, and it does not use up MaxRetries: a
// replica address can go stale (the pod is gone; a cluster may hand its
// address out again at once) and a request should then wait for a replica,
// as one that found none would, rather than get a 502. The replica is
// marked down, so it is probed before any reuse and a request cannot spin
// on it; the request waits until its queue deadline (then the usual 504).
func (a *Activator) forward(ctx *fasthttp.RequestCtx, x *exchange) {
	a.setProxyHeaders(ctx, x)
	x.out.Begin(&ctx.Request)
	upgrade := ctx.Request.Header.ConnectionUpgrade()
	for retries := 0; ; {
		var err error
		if upgrade {
			err = a.forwardUpgrade(ctx, x)
		} else {
			err = a.forwardOnce(ctx, x)
		}
		if err == nil {
			return
		}
		switch {
		case proxycore.IsClientError(err):
			a.badBody(ctx, x, err)
			return
		case !a.clock.Now().Before(x.deadline) || !x.out.MaySendAgain(err):
			a.fail(ctx, x, err)
			return
		case proxycore.IsDialError(err):
			x.dialErr, x.dialAddr = err, x.r.addr
		case retries < a.opts.MaxRetries && !upgrade && proxycore.IsConnError(err):
			retries++
			x.queueDeadline = x.deadline // it was admitted once: wait as long as it may
		default:
			a.fail(ctx, x, err)
			return
		}
		if !a.replace(ctx, x) {
			return
		}
	}
}

// forwardOnce sends the request to x's replica once and, on success, sets
// the response.
func (a *Activator) forwardOnce(ctx *fasthttp.RequestCtx, x *exchange) error {
	// The time to answer is learnt where queueing happens: capacity
	// limits, or a request that waited.
	learn := x.queued || x.r.capacity.Load() > 0
	var sent time.Time
	if learn {
		sent = a.clock.Now()
	}
	if err := a.roundTrip(&ctx.Request, &ctx.Response, x); err != nil {
		return err
	}
	if learn {
		x.rev.throttle.observe(a.clock.Now().Sub(sent))
	}
	a.respond(ctx, x)
	return nil
}

// replace gives up the replica that failed (it is taken out of rotation
// and probed again) and takes another, waiting in the queue until the
// queue deadline if none is free. It reports false when it answered the
// request itself.
func (a *Activator) replace(ctx *fasthttp.RequestCtx, x *exchange) bool {
	a.metrics.retries.Inc()
	a.markDown(x.rev, x.r)
	x.rev.throttle.release(x.r)
	if x.r = x.rev.throttle.take(); x.r != nil {
		return true
	}
	return a.queue(ctx, x)
}

// setProxyHeaders marks the request as proxied by the activator with the
// per-install secret (the queue-proxy counts it as such only then; any
// marker the client sent is replaced), records the client in
// X-Forwarded-For and drops the routing header.
func (a *Activator) setProxyHeaders(ctx *fasthttp.RequestCtx, x *exchange) {
	h := &ctx.Request.Header
	h.SetBytesV(stats.ProxyHeaderName, a.marker)
	if len(h.Peek(RevisionHeader)) > 0 {
		h.Del(RevisionHeader)
	}
	ip, ok := netip.AddrFromSlice(ctx.RemoteIP())
	if !ok {
		return
	}
	x.scratch = x.scratch[:0]
	if prior := h.Peek(fasthttp.HeaderXForwardedFor); len(prior) > 0 {
		x.scratch = append(append(x.scratch, prior...), ", "...)
	}
	x.scratch = ip.Unmap().AppendTo(x.scratch)
	h.SetBytesV(fasthttp.HeaderXForwardedFor, x.scratch)
}

// respond ends a request whose response is in ctx.Response: at once for
// a buffered body, when fasthttp has written it for a streamed one.
func (a *Activator) respond(ctx *fasthttp.RequestCtx, x *exchange) {
	a.metrics.results[resultProxied].Inc()
	x.rev.m.results[resultProxied].Inc()
	if x.releaseConn == nil {
		x.finish()
		return
	}
	resp := &ctx.Response
	resp.ImmediateHeaderFlush = true
	resp.SetBodyStream(x, max(resp.Header.ContentLength(), -1))
}

// Read implements io.Reader for a streamed response body.
func (x *exchange) Read(p []byte) (int, error) { return x.respBody.Read(p) }

// CloseWithError is called by fasthttp once the streamed body is written,
// or failed (err != nil): the replica's connection goes back to the pool
// only if the body was read to its end; then the request ends.
func (x *exchange) CloseWithError(err error) error {
	x.releaseConn(err == nil && x.respBody.Reusable())
	x.releaseConn = nil
	x.finish()
	return nil
}

// fail answers a request whose hop to the replica failed before any byte
// of the response reached the client.
func (a *Activator) fail(ctx *fasthttp.RequestCtx, x *exchange, err error) {
	ctx.Response.Reset()
	if x.out.Wrote() && x.out.ClientBodyUnread() {
		// The body was read in part: its rest must not be parsed as the
		// next request. (A body never read is skipped by answer.)
		ctx.SetConnectionClose()
	}
	if proxycore.IsTimeout(err) || !a.clock.Now().Before(x.deadline) { // a dial cut short by the deadline, too
		a.answer(ctx, x, resultUpstreamTimeout, fasthttp.StatusGatewayTimeout, fmt.Appendf(nil,
			"activator: revision %s: the replica did not respond within the request timeout of %v\n",
			x.rev.key, x.rev.cfg.Load().timeout))
		return
	}
	a.log.Debug("proxying failed", zap.String("revision", x.rev.key), zap.String("address", x.r.addr), zap.Error(err))
	a.answer(ctx, x, resultUpstreamError, fasthttp.StatusBadGateway, fmt.Appendf(nil,
		"activator: revision %s: proxying to the replica at %s failed: %v\n", x.rev.key, x.r.addr, err))
}

// badBody answers a request whose streamed body could not be read from
// the client (a malformed chunk, a body cut short): the client's fault,
// 400, and the connection closes, since the rest cannot be framed.
func (a *Activator) badBody(ctx *fasthttp.RequestCtx, x *exchange, err error) {
	ctx.Response.Reset()
	ctx.SetConnectionClose()
	a.answer(ctx, x, resultBadRequest, fasthttp.StatusBadRequest, fmt.Appendf(nil, "activator: %v\n", err))
}
