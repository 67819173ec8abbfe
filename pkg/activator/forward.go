package activator

import (
	"errors"
	"fmt"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/proxy/proxycore"
	"ebb.dev/ebb/pkg/stats"
)

// forward sends the request to the replica it holds a slot on through the
// hop (proxycore.Trip: the attempts, the retry rule, the body read whole
// or streamed, an upgrade only on 101), with the activator's marker and
// without its routing header, and counts how it ended.
func (a *Activator) forward(ctx *fasthttp.RequestCtx, x *exchange) {
	h := &ctx.Request.Header
	marks := x.rev.marker.Load()
	h.SetCanonical(proxyHeaderKey, marks.request) // any marker the client sent is replaced
	x.NotSent = marks.notSent
	if len(x.Head.Got[0]) > 0 {
		h.Del(revisionHeader)
	}
	pending, err := x.Forward(ctx)
	if err != nil {
		a.fail(ctx, x, err)
		return
	}
	if !x.sent.IsZero() {
		x.rev.throttle.observe(a.clock.Now().Sub(x.sent))
		x.sent = time.Time{}
	}
	x.status = ctx.Response.StatusCode()
	if x.tunnel == nil { // a tunnel was counted when it opened
		a.metrics.results[resultProxied].Inc()
		x.rev.m.results[resultProxied].Inc()
	}
	if !pending {
		x.finish()
		return
	}
	x.headAt = a.clock.Now() // the body streams, or a tunnel opened
}

// proxyHeaderKey is the marker's field name in canonical form:
// SetCanonical skips fasthttp's normalization of it on every request.
var proxyHeaderKey = []byte(stats.ProxyHeaderName)

// retry is the activator's policy for a request the retry rule lets be
// sent again (proxycore.Policy.Retry): it gives up the replica that
// failed (taken out of rotation and probed again) and takes another,
// waiting in the queue until the queue deadline if none is free.
//
// A dial error (refused, no route, dial timeout) means nothing was sent,
// so it is always safe to try again, and it does not use up MaxRetries: a
// replica address can go stale (the pod is gone; a cluster may hand its
// address out again at once) and a request should then wait for a
// replica, as one that found none would, rather than get a 502. The
// replica is marked down, so it is probed before any reuse and a request
// cannot spin on it; the request waits until its queue deadline (then the
// usual 504). A connect that timed out (ConnectTimeout) is such a dial
// error, logged at Warning and counted: a SYN nobody answered. Other
// connection errors are sent to another replica up to MaxRetries times.
//
// A replica's queue-proxy that proved the request never reached its app
// (proxycore.ErrNotSent: the app refused the connection; it crashed or
// restarts) is treated as a dial error too, except that the request may
// wait for another replica until its own deadline, as a request for a
// revision at zero does: the replica is not ready (its queue-proxy says
// so at once), and a revision whose every replica is crashing is held
// until the platform names the failure (RevisionFailingError: a 503 that
// says why) or a replica is back.
func (a *Activator) retry(x *exchange, err error) error {
	switch {
	case !a.clock.Now().Before(x.deadline):
		return err
	case proxycore.IsNotSent(err):
		x.dialErr, x.dialAddr = err, x.r.addr
		x.queueDeadline = x.deadline
		a.metrics.notSent.Inc()
	case proxycore.IsDialError(err):
		x.dialErr, x.dialAddr = err, x.r.addr
		if proxycore.IsTimeout(err) { // ConnectTimeout: the deadline was further (above)
			a.metrics.connectTimeouts.Inc()
			a.log.Warn("connecting to a replica timed out; the request goes to another replica or waits for one", zap.String("revision", x.rev.key),
				zap.String("address", x.r.addr), zap.Duration("connectTimeout", a.opts.ConnectTimeout))
		}
	case x.retries < a.opts.MaxRetries && proxycore.IsConnError(err):
		x.retries++
		x.queueDeadline = x.deadline // it was admitted once: wait as long as it may
	default:
		return err
	}
	a.metrics.retries.Inc()
	a.markDown(x.rev, x.r)
	x.rev.throttle.release(x.r)
	if x.r = x.rev.throttle.take(); x.r != nil {
		return nil
	}
	return a.queue(x)
}

// fail answers a request whose trip failed before any byte of the
// response reached the client: no replica came for its resend
// (rejection), its body could not be read (400, and the connection
// closes), a deadline passed (504), or the replica failed (502).
func (a *Activator) fail(ctx *fasthttp.RequestCtx, x *exchange, err error) {
	x.Settle(ctx)
	switch {
	case isRejection(err):
		a.reject(ctx, x, err)
	case errors.Is(err, proxycore.ErrTunnelRefused):
		a.reject(ctx, x, errShuttingDown)
	case proxycore.IsClientError(err):
		ctx.SetConnectionClose() // the rest of the body cannot be framed
		a.end(ctx, x, resultBadRequest, fasthttp.StatusBadRequest, fmt.Appendf(nil, "activator: %v\n", err))
	case proxycore.IsTimeout(err) || !a.clock.Now().Before(x.deadline): // a dial cut short by the deadline, too
		a.end(ctx, x, resultUpstreamTimeout, fasthttp.StatusGatewayTimeout, fmt.Appendf(nil,
			"activator: revision %s: the replica did not respond within the request timeout of %v\n",
			x.rev.key, x.rev.cfg.Load().timeout))
	case proxycore.IsNotSent(err): // its body streamed, so it could not be sent to another replica
		ctx.Response.Header.Set("Retry-After", "1")
		a.end(ctx, x, resultUpstreamError, fasthttp.StatusServiceUnavailable, fmt.Appendf(nil,
			"activator: revision %s: the app of the replica at %s refused the connection, and the request's body, streamed, "+
				"cannot be sent to another replica; it did not reach any app: retry it\n", x.rev.key, x.r.addr))
	default:
		a.log.Debug("proxying failed", zap.String("revision", x.rev.key), zap.String("address", x.r.addr), zap.Error(err))
		a.end(ctx, x, resultUpstreamError, fasthttp.StatusBadGateway, fmt.Appendf(nil,
			"activator: revision %s: proxying to the replica at %s failed: %v\n", x.rev.key, x.r.addr, err))
	}
}
