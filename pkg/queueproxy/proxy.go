package queueproxy

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/proxy/breaker"
	"ebb.dev/ebb/pkg/proxy/busypoll"
	"ebb.dev/ebb/pkg/proxy/h2c"
	"ebb.dev/ebb/pkg/proxy/proxycore"
	"ebb.dev/ebb/pkg/stats"
)

// proxy is the request path of the queue-proxy: probe answers, accounting,
// the breaker, the timeouts and the hop to the app. handle is its fasthttp
// handler; it is safe for concurrent use and allocates nothing per request
// in steady state (BenchmarkProxy).
type proxy struct {
	cfg          Config
	headerBudget time.Duration // min of the timeouts that bound the first response byte
	bodies       responseBodies

	acct    *stats.Accounting
	marker  proxyMarker          // honours and strips K-Proxy-Request (marker.go)
	open    atomic.Int64         // requests in progress (what busy polling looks at)
	poll    *busypoll.Poller     // nil: reads never poll
	breaker *breaker.Breaker     // nil: containerConcurrency 0, no limit
	app     *fasthttp.HostClient // the hop's upstream (proxycore.Trip runs each exchange)
	checks  proxycore.ConnChecks // app connections closed for not being clean
	h2up    *h2c.UpgradeServer   // serves the connections upgraded to h2c (Upgrade: h2c)
	ready   *readiness
	metrics *metrics
	log     *zap.Logger
	now     func() time.Time

	exchanges sync.Pool // *exchange
}

// responseBodies are the fixed answers the proxy gives itself, built once.
type responseBodies struct {
	queueFull     []byte
	headerTimeout []byte // the first byte was due: whichever timeout is the shortest
	requestTO     []byte
	idleTO        []byte
	notReady      []byte
	probeOK       []byte
	badProbe      []byte
}

func newResponseBodies(c Config) responseBodies {
	secs := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s" }
	b := responseBodies{
		queueFull: fmt.Appendf(nil, "queue-proxy: overloaded: %d requests running and %d queued (CONTAINER_CONCURRENCY=%d); retry later\n",
			c.ContainerConcurrency, c.queueDepth(), c.ContainerConcurrency),
		requestTO: []byte("queue-proxy: request timeout: the app did not complete the response within " + secs(c.RequestTimeout) + " (REVISION_TIMEOUT_SECONDS)\n"),
		idleTO:    []byte("queue-proxy: idle timeout: the app sent nothing for " + secs(c.IdleTimeout) + " (REVISION_IDLE_TIMEOUT_SECONDS)\n"),
		notReady:  []byte("queue-proxy: not ready\n"),
		probeOK:   []byte(stats.ProbeHeaderValue),
		badProbe:  []byte("queue-proxy: unexpected " + stats.ProbeHeaderName + " value, want " + stats.ProbeHeaderValue + "\n"),
	}
	switch {
	case c.IdleTimeout > 0 && c.IdleTimeout < c.responseStart():
		b.headerTimeout = b.idleTO
	case c.responseStart() < c.RequestTimeout:
		b.headerTimeout = []byte("queue-proxy: response start timeout: the app did not start responding within " +
			secs(c.responseStart()) + " (REVISION_RESPONSE_START_TIMEOUT_SECONDS)\n")
	default:
		b.headerTimeout = b.requestTO
	}
	return b
}

// headerBudget is the time a request has, from arrival, until the first
// byte of its response: all three timeouts run from arrival, queueing
// included, as in Knative.
func headerBudget(c Config) time.Duration {
	d := min(c.RequestTimeout, c.responseStart())
	if c.IdleTimeout > 0 {
		d = min(d, c.IdleTimeout)
	}
	return d
}

// handle serves one request on the serving port (behind
// proxycore.NewServer's target and framing checks).
func (p *proxy) handle(ctx *fasthttp.RequestCtx) {
	x := p.exchanges.Get().(*exchange)
	x.Scan(&ctx.Request.Header)
	h := &ctx.Request.Header
	switch {
	case len(x.Head.Got[0]) > 0:
		p.probeAnswer(x.Head.Got[0]).Write(ctx)
		p.exchanges.Put(x)
		return
	case isKubeletProbe(h.UserAgent()):
		p.kubeletProbeAnswer().Write(ctx)
		p.exchanges.Put(x)
		return
	case x.Head.Upgrade() && p.h2up.Take(ctx):
		p.exchanges.Put(x)
		return // now an HTTP/2 connection: its streams are the requests
	}
	start := ctx.Time() // read by fasthttp just before the handler: one clock read less
	x.reset(start, p.marker.arrival(h, x.Head.Got[1]))
	p.acct.In(start, x.via)
	p.open.Add(1)
	if p.breaker != nil {
		if err := p.breaker.Reserve(&x.slot); err != nil {
			p.reject(ctx, x, err)
			return
		}
		x.holdsSlot = true
		x.appStart = p.now()
	}
	pending, err := x.Forward(ctx)
	switch {
	case err != nil:
		p.fail(ctx, x, err)
	case !pending:
		x.finish(p.now(), ctx.Response.StatusCode(), true)
	}
}

// reject answers a request the breaker did not admit.
func (p *proxy) reject(ctx *fasthttp.RequestCtx, x *exchange, err error) {
	proxycore.DiscardBody(ctx)
	if errors.Is(err, breaker.ErrQueueFull) {
		p.metrics.queueFull.Inc()
		ctx.Response.Header.Set("Retry-After", "1")
		p.answer(ctx, fasthttp.StatusServiceUnavailable, p.bodies.queueFull)
	} else {
		p.metrics.timeouts.Inc()
		p.answer(ctx, fasthttp.StatusGatewayTimeout, p.bodies.headerTimeout)
	}
	x.finish(p.now(), ctx.Response.StatusCode(), false)
}

// fail answers a request whose hop to the app failed before any of the
// response was sent.
func (p *proxy) fail(ctx *fasthttp.RequestCtx, x *exchange, err error) {
	x.Settle(ctx)
	switch {
	case proxycore.IsClientError(err):
		p.answer(ctx, fasthttp.StatusBadRequest, fmt.Appendf(nil, "queue-proxy: %v\n", err))
	case errors.Is(err, proxycore.ErrHeadTimeout):
		p.metrics.timeouts.Inc()
		p.answer(ctx, fasthttp.StatusGatewayTimeout, p.bodies.headerTimeout)
	case errors.Is(err, proxycore.ErrBodyTimeout):
		p.metrics.timeouts.Inc()
		body := p.bodies.idleTO
		if !p.now().Before(x.requestDeadline) || p.cfg.IdleTimeout == 0 {
			body = p.bodies.requestTO
		}
		p.answer(ctx, fasthttp.StatusGatewayTimeout, body)
	case proxycore.IsDialError(err):
		p.appRefused(ctx, x.via, err)
	default:
		p.log.Debug("proxy to app failed", zap.Error(err))
		p.answer(ctx, fasthttp.StatusBadGateway, fmt.Appendf(nil, "queue-proxy: cannot proxy to the app on 127.0.0.1:%d: %v\n", p.cfg.UserPort, err))
	}
	x.finish(p.now(), ctx.Response.StatusCode(), false)
}

// appRefused answers a request for which no connection to the app could
// be made (refused, or the connect timed out): nothing of it reached the
// app. Readiness fails at once (Readiness.AppRefused): the activator's
// and the kubelet's probes see it now, not after the next probe period.
// The answer is a 503 a client may retry; to the activator (an armed
// marker: only a request that carried it gets the proof) it carries
// stats.NotSentHeaderName, so the activator sends the request to another
// replica or holds it, and no client ever sees this answer through it.
func (p *proxy) appRefused(ctx *fasthttp.RequestCtx, via stats.Arrival, err error) {
	p.ready.appRefused()
	p.metrics.appRefused.Inc()
	ctx.Response.Header.Set("Retry-After", "1")
	p.answer(ctx, fasthttp.StatusServiceUnavailable, fmt.Appendf(nil,
		"queue-proxy: the app on 127.0.0.1:%d cannot be reached (%v): the request did not reach it; retry it\n", p.cfg.UserPort, err))
	if via == stats.ViaActivator {
		ctx.Response.Header.SetCanonical(notSentKey, p.marker.m.NotSent())
	}
}

// notSentKey is stats.NotSentHeaderName in canonical form.
var notSentKey = []byte(stats.NotSentHeaderName)

func (p *proxy) answer(ctx *fasthttp.RequestCtx, status int, body []byte) {
	ctx.Response.SetStatusCode(status)
	ctx.Response.Header.SetContentType("text/plain; charset=utf-8")
	ctx.Response.SetBodyRaw(body)
}

// probeAnswer is the answer to the activator's probe header (and to
// kubelet probes, whose value is the expected one) from the readiness
// state, without reaching the app; both protocols write it.
func (p *proxy) probeAnswer(value []byte) proxycore.ProbeAnswer {
	switch {
	case string(value) != stats.ProbeHeaderValue:
		return proxycore.ProbeAnswer{Status: fasthttp.StatusBadRequest, Body: p.bodies.badProbe}
	case p.ready.ready():
		return proxycore.ProbeAnswer{Status: fasthttp.StatusOK, Body: p.bodies.probeOK}
	}
	return proxycore.ProbeAnswer{Status: fasthttp.StatusServiceUnavailable, Body: p.bodies.notReady}
}

// kubeletProbeAnswer is the answer to the kubelet's readiness probe: the
// app's readiness, a drain aside (Readiness.AppReady says why).
func (p *proxy) kubeletProbeAnswer() proxycore.ProbeAnswer {
	if p.ready.appReady() {
		return proxycore.ProbeAnswer{Status: fasthttp.StatusOK, Body: p.bodies.probeOK}
	}
	return proxycore.ProbeAnswer{Status: fasthttp.StatusServiceUnavailable, Body: p.bodies.notReady}
}

func isKubeletProbe(ua []byte) bool {
	const prefix = "kube-probe/"
	return len(ua) >= len(prefix) && string(ua[:len(prefix)]) == prefix
}
