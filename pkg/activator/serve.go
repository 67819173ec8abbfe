package activator

import (
	"fmt"

	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/pkg/proxy/proxycore"
	"ebb.dev/ebb/pkg/stats"
)

// revisionHeader names the revision ("namespace/name") explicitly,
// bypassing the Host header; tests and tools use it. It is honoured only
// with Options.RevisionHeader, and never forwarded.
const revisionHeader = "Ebb-Revision"

// serveRequest is the activator's fasthttp handler (behind
// proxycore.NewServer's target and framing checks): the request's way from
// the client to a replica (routing, admission, the hop), each step in its
// own file: routing.go and host.go route, admit.go admits or queues,
// forward.go runs the hop (proxycore.Trip) with the activator's policy
// (exchange.go).
func (a *Activator) serveRequest(ctx *fasthttp.RequestCtx) {
	x := a.exchanges.Get().(*exchange)
	x.Scan(&ctx.Request.Header)
	switch {
	case len(x.Head.Got[1]) > 0:
		a.probeAnswer().Write(ctx)
		a.exchanges.Put(x)
		return
	case x.Head.Upgrade() && a.h2s.up.Take(ctx):
		a.exchanges.Put(x)
		return // now an HTTP/2 connection (h2.go): its streams are the requests
	}
	rev, miss := a.routeBy(x.Head.Got[0], ctx.Request.Header.Host(), x)
	if rev == nil {
		a.noRoute(ctx, x, miss)
		a.exchanges.Put(x)
		return
	}
	x.begin(rev, a.clock.Now())
	x.client = ctx.Conn()
	if a.admit(ctx, x) {
		a.forward(ctx, x)
	}
}

// routeBy finds the revision of a request by its Ebb-Revision header
// (empty when absent) and Host, for both protocols, or nil and why: the
// key it looked for is left in x.scratch.
func (a *Activator) routeBy(revHeader, host []byte, x *exchange) (*revision, routeMiss) {
	t := a.routes.Load()
	byHeader := len(revHeader) > 0 && a.opts.RevisionHeader
	if !byHeader && x.routedTable == t && string(host) == string(x.routedHost) {
		return x.routedRev, missNone
	}
	if byHeader {
		x.scratch = appendLower(x.scratch[:0], revHeader)
	} else {
		key, ok := a.opts.Hosts.appendKey(x.scratch[:0], host)
		x.scratch = key
		if !ok {
			return nil, missHost
		}
	}
	if !a.nss.allows(x.scratch) {
		return nil, missNamespace
	}
	rev := t.byKey[string(x.scratch)]
	if rev == nil {
		return nil, missRevision
	}
	if !byHeader && len(host) <= maxHostLen {
		x.routedHost, x.routedTable, x.routedRev = append(x.routedHost[:0], host...), t, rev
	}
	return rev, missNone
}

func (a *Activator) noRoute(ctx *fasthttp.RequestCtx, x *exchange, miss routeMiss) {
	h := &ctx.Request.Header
	var body []byte
	switch {
	case miss == missNamespace:
		body = fmt.Appendf(nil, "activator: namespace of %q is not served by this activator (it serves %s)\n",
			x.scratch, a.nss)
	case miss == missRevision && a.opts.RevisionHeader && len(x.Head.Got[0]) > 0:
		body = fmt.Appendf(nil, "activator: no revision %q (from the %s header)\n", x.scratch, revisionHeader)
	case miss == missRevision:
		body = fmt.Appendf(nil, "activator: no revision %s (host %q)\n", x.scratch, h.Host())
	default:
		body = fmt.Appendf(nil, "activator: host %q names no revision; use NAME.NAMESPACE, NAME.NAMESPACE.svc, "+
			"NAME.NAMESPACE.svc.%s%s%s\n", h.Host(), a.opts.Hosts.ClusterDomain, localHint(&a.opts.Hosts), a.revisionHeaderHint())
	}
	proxycore.DiscardBody(ctx)
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

// probeAnswer is the answer to K-Network-Probe (any value), on both
// protocols: the activator's name, as Knative's activator does, or 503
// while it is not ready.
func (a *Activator) probeAnswer() proxycore.ProbeAnswer {
	if a.Ready() {
		return proxycore.ProbeAnswer{Status: fasthttp.StatusOK, Body: probeReady}
	}
	return proxycore.ProbeAnswer{Status: fasthttp.StatusServiceUnavailable, Body: probeNotReady}
}

var probeReady, probeNotReady = []byte("activator"), []byte("activator: not ready\n")

// wantFields are the request fields the activator reads itself, found in
// the hop's one pass over the head (proxycore.RequestHead.Want).
var wantFields = [2]string{revisionHeader, stats.ProbeHeaderName}
