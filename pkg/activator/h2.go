package activator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/proxy/connlimit"
	"ebb.dev/ebb/pkg/proxy/h2c"
	"ebb.dev/ebb/pkg/proxy/proxycore"
	"ebb.dev/ebb/pkg/stats"
)

// The HTTP/2 side of the data port. Connections that start with the
// HTTP/2 preface (h2c.Split) are served by net/http's HTTP/2 server, and
// each stream is one request for everything the HTTP/1.1 path does
// (serve.go, admit.go, forward.go): routing by Host (:authority), the
// revision's queue and its bounds, the poke at zero, the throttle and the
// load balancing, the accounting and the results. The hop is proxycore's
// StreamHop, to the replica's queue-proxy over h2c (prior knowledge), which
// takes HTTP/2 on the same port; the exchange is its policy
// (proxycore.StreamPolicy). A stream waiting for a replica holds its
// exchange and its place in the queue; its body waits in the client's
// HTTP/2 flow-control window (the server takes in at most streamWindow of
// it; the queue's byte bound counts that and the stream's header fields:
// sizeStream).
//
// The retry rule: a stream goes to another replica only when nothing of
// it was sent (the dial failed and its body was never read); the h2c
// transport also sends it again where the replica said it did not process
// it (GOAWAY below its ID, or REFUSED_STREAM). Any other failure before
// the response is answered (gRPC: UNAVAILABLE, or DEADLINE_EXCEEDED).

// h2Side is the activator's HTTP/2 server and hop.
type h2Side struct {
	server *h2c.Server          // prior knowledge, from h2c.Split
	up     *h2c.UpgradeServer   // connections upgraded from HTTP/1.1 (Upgrade: h2c)
	hop    *proxycore.StreamHop // to the replicas
}

// newH2Side builds the HTTP/2 side of a (nothing starts).
func (a *Activator) newH2Side() (*h2Side, error) {
	var dial func(ctx context.Context, network, addr string) (net.Conn, error)
	if d := a.opts.Dial; d != nil {
		dial = func(_ context.Context, _, addr string) (net.Conn, error) { return d(addr) }
	}
	errLog, _ := zap.NewStdLogAt(a.log, zap.DebugLevel) // net/http's messages: client connection errors, aborted copies
	tr := h2c.NewTransport(h2c.TransportOptions{DialTimeout: a.opts.ConnectTimeout, IdleConnTimeout: 30 * time.Second, Dial: dial})
	s := &h2Side{hop: proxycore.NewStreamHop(proxycore.StreamHopOptions{Transport: tr, WriteTimeout: a.opts.WriteTimeout,
		ErrorLog: errLog})}
	o := h2c.ServerOptions{HeaderTimeout: a.opts.HeaderTimeout, IdleTimeout: a.opts.IdleTimeout,
		MaxHeaderBytes: proxycore.MaxRequestHeadBytes, MaxReceiveBufferPerStream: streamWindow,
		WriteTimeout: a.opts.WriteTimeout, ErrorLog: errLog}
	s.server = h2c.NewServer(http.HandlerFunc(a.serveStream), o)
	var err error
	if s.up, err = h2c.NewUpgradeServer(http.HandlerFunc(a.serveStream), o); err != nil {
		return nil, err
	}
	return s, nil
}

// serveSplit serves the listener's HTTP/1.1 connections with fasthttp and
// its HTTP/2 ones with the HTTP/2 server, until both stop; a failure goes
// to failed unless the activator is stopping.
func (a *Activator) serveSplit(failed chan<- error) {
	split := h2c.NewSplit(a.opts.Listener, h2c.SplitOptions{HeadTimeout: a.opts.HeaderTimeout, MaxPending: a.opts.MaxConns})
	var wg sync.WaitGroup
	report := func(what string, err error) {
		if err != nil && !a.stopping.Load() && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			select {
			case failed <- fmt.Errorf("serving %s: %w", what, err):
			default:
			}
		}
	}
	wg.Go(func() { report("connections", split.Run()) })
	h1 := proxycore.WriteProgressListener(split.HTTP1(), a.opts.WriteTimeout) // a client that stops reading is cut
	wg.Go(func() { report("HTTP/1.1", a.server.Serve(h1)) })
	h2 := connlimit.Listen(split.HTTP2(), connlimit.Options{Max: a.opts.MaxConns}) // HTTP/1.1 has fasthttp's cap
	wg.Go(func() { report("HTTP/2", a.h2s.server.Serve(h2)) })
	wg.Wait()
}

// shutdownStreams sends GOAWAY on every HTTP/2 connection (prior
// knowledge and upgraded) and waits, up to ctx, for their streams (queued
// ones included); it reports whether they all ended.
func (a *Activator) shutdownStreams(ctx context.Context) <-chan bool {
	done := make(chan bool, 1)
	go func() {
		upgraded := make(chan error, 1)
		go func() { upgraded <- a.h2s.up.Shutdown(ctx) }()
		err := a.h2s.server.Shutdown(ctx)
		done <- errors.Join(err, <-upgraded) == nil
	}()
	return done
}

// serveStream serves one HTTP/2 stream.
func (a *Activator) serveStream(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(stats.ProbeHeaderName) != "" {
		a.probeAnswer().WriteHTTP(w)
		return
	}
	if err := h2c.ContentLengthError(r.Header); err != nil { // malformed: the app would get an empty body
		a.metrics.results[resultBadRequest].Inc()
		h2c.WriteError(w, r, http.StatusBadRequest, "activator: "+err.Error()+"\n")
		return
	}
	if err := h2c.AuthorityError(r.Host); err != nil { // as the HTTP/1.1 server refuses it; Go's client would rewrite it
		a.metrics.results[resultBadRequest].Inc()
		h2c.WriteError(w, r, http.StatusBadRequest, "activator: "+err.Error()+"\n")
		return
	}
	if err := h2c.ContentTypeError(r.Header); err != nil { // as the HTTP/1.1 server refuses it
		a.metrics.results[resultBadRequest].Inc()
		h2c.WriteError(w, r, http.StatusBadRequest, "activator: "+err.Error()+"\n")
		return
	}
	x := a.exchanges.Get().(*exchange)
	rev, miss := a.routeBy([]byte(r.Header.Get(revisionHeader)), []byte(r.Host), x)
	if rev == nil {
		a.metrics.results[resultNoRevision].Inc()
		h2c.WriteError(w, r, http.StatusNotFound, fmt.Sprintf("activator: no revision for host %q (%s)\n", r.Host, missWords[miss]))
		a.exchanges.Put(x)
		return
	}
	now := a.clock.Now()
	x.begin(rev, now)
	x.sizeStream(r)
	x.stream = a.h2s.hop.Begin(r, proxycore.StreamBounds{Start: now, Timeout: rev.cfg.Load().timeout})
	x.stream.NotSent = rev.marker.Load().notSent
	defer x.finish() // also when the hop aborts the stream (a panic of http.ErrAbortHandler)
	if dl := x.stream.Deadline(); dl.Before(x.deadline) {
		x.deadline = dl // a shorter grpc-timeout: also for the wait in the queue
	}
	if x.queueDeadline.After(x.deadline) {
		x.queueDeadline = x.deadline
	}
	if x.r = rev.throttle.take(); x.r == nil {
		if err := a.queue(x); err != nil {
			x.rejectStream(w, err)
			return
		}
	}
	a.h2s.hop.Forward(w, x.stream, x)
}

// missWords say why a stream found no revision.
var missWords = map[routeMiss]string{missHost: "the host names no revision", missNamespace: "namespace not served",
	missRevision: "no such revision", missNone: ""}

// rejectStream answers a stream that got no replica (reject's HTTP/2 twin).
func (x *exchange) rejectStream(w http.ResponseWriter, err error) {
	r := x.stream.Request()
	w.Header().Set("Retry-After", "1")
	var full *queueFullError
	var failing *revisionFailingError
	switch {
	case errors.As(err, &failing):
		w.Header().Set("Retry-After", failingRetryAfter)
		x.endStream(w, r, resultRevisionFailing, http.StatusServiceUnavailable, fmt.Sprintf(
			"activator: %s", failingLine(x.rev.key, &failing.Failure)))
	case errors.As(err, &full):
		x.endStream(w, r, resultQueueFull, http.StatusServiceUnavailable, fmt.Sprintf(
			"activator: revision %s: overloaded: the %s queue is full (%d %s waiting); retry later", x.rev.key, full.Scope, full.Limit, full.Bound))
	case errors.Is(err, errQueueTimeout):
		x.endStream(w, r, resultQueueTimeout, http.StatusGatewayTimeout, fmt.Sprintf(
			"activator: revision %s: no replica became available in time; retry later", x.rev.key))
	case errors.Is(err, errRevisionGone):
		x.endStream(w, r, resultGone, http.StatusServiceUnavailable, fmt.Sprintf(
			"activator: revision %s was removed while the request waited", x.rev.key))
	case errors.Is(err, errClientGone):
		x.count(resultClientGone)
		x.status = statusClientClosedRequest
		w.WriteHeader(statusClientClosedRequest) // nobody reads it
	default:
		x.endStream(w, r, resultShutdown, http.StatusServiceUnavailable, "activator: shutting down; retry on another activator")
	}
}

// endStream answers a stream with the activator's own response and counts it.
func (x *exchange) endStream(w http.ResponseWriter, r *http.Request, res result, status int, msg string) {
	x.count(res)
	x.status = status
	h2c.WriteError(w, r, status, msg+"\n")
}

// count counts how a request ended.
func (x *exchange) count(res result) {
	x.a.metrics.results[res].Inc()
	x.rev.m.results[res].Inc()
}

// Target implements proxycore.StreamPolicy: the replica whose slot the
// stream holds. The time to answer is learnt where queueing happens, from
// here to the head (Answered).
func (x *exchange) Target() string {
	if x.queued || x.r.capacity.Load() > 0 {
		x.sent = x.a.clock.Now()
	}
	return x.r.addr
}

// Rewrite implements proxycore.StreamPolicy: the activator's marker in,
// its routing header out.
func (x *exchange) Rewrite(out http.Header) {
	out.Set(stats.ProxyHeaderName, string(x.rev.marker.Load().request))
	out.Del(revisionHeader)
}

// Answered implements proxycore.StreamPolicy: the replica answered.
func (x *exchange) Answered(resp *http.Response) {
	x.status = resp.StatusCode
	x.headAt = x.a.clock.Now()
	if !x.sent.IsZero() {
		x.rev.throttle.observe(x.headAt.Sub(x.sent))
		x.sent = time.Time{}
	}
	x.count(resultProxied)
}

// Fail implements proxycore.StreamPolicy: a stream whose hop to the
// replica failed before its answer started; a replica that could not be
// reached is taken out of rotation and probed again.
func (x *exchange) Fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case isRejection(err): // no replica came for the resend
		x.rejectStream(w, err)
	case errors.Is(err, proxycore.ErrHeadTimeout) || errors.Is(err, proxycore.ErrBodyTimeout):
		x.endStream(w, r, resultUpstreamTimeout, http.StatusGatewayTimeout, fmt.Sprintf(
			"activator: revision %s: the replica did not respond within the request timeout", x.rev.key))
	case errors.Is(err, proxycore.ErrClientGone):
		x.count(resultClientGone)
		x.status = statusClientClosedRequest
		w.WriteHeader(statusClientClosedRequest)
	case proxycore.IsNotSent(err): // its body was read, so it cannot go to another replica
		x.a.markDown(x.rev, x.r)
		w.Header().Set("Retry-After", "1")
		x.endStream(w, r, resultUpstreamError, http.StatusServiceUnavailable, fmt.Sprintf(
			"activator: revision %s: the app of the replica at %s refused the connection, and the stream's body, read, "+
				"cannot be sent to another replica; it did not reach any app: retry it", x.rev.key, x.r.addr))
	default:
		if proxycore.IsDialError(err) {
			x.a.markDown(x.rev, x.r)
		}
		x.a.log.Debug("proxying a stream failed", zap.String("revision", x.rev.key), zap.String("address", x.r.addr), zap.Error(err))
		x.endStream(w, r, resultUpstreamError, http.StatusBadGateway, fmt.Sprintf(
			"activator: revision %s: proxying to the replica at %s failed: %v", x.rev.key, x.r.addr, err))
	}
}
