package activator

import (
	"context"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/connlimit"
	"ebb.dev/ebb/pkg/h2c"
	"ebb.dev/ebb/pkg/proxycore"
	"ebb.dev/ebb/pkg/stats"
)

// The HTTP/2 side of the data port. Connections that start with the
// HTTP/2 preface (h2c.Split) are served by net/http's HTTP/2 server, and
// each stream is one request for everything the HTTP/1.1 path does
// (handler.go, forward.go): routing by Host (:authority), the revision's
// queue and its bounds, the poke at zero, the throttle and the load
// balancing, the accounting and the results; it is forwarded h2c (prior
// knowledge) to the replica's queue-proxy, which takes HTTP/2 on the same
// port. A stream waiting for a replica holds its exchange and its place in
// the queue; its body waits in the client's HTTP/2 flow-control window
// (the server takes in at most streamWindow of it; the queue's byte bound
// counts that and the stream's header fields: sizeStream).
//
// The retry rule: a stream goes to another replica only when nothing of
// it was sent (the dial failed and its body was never read: heldBody);
// the h2c transport also sends it again where the replica said it did not
// process it (GOAWAY below its ID, or REFUSED_STREAM). Any other failure
// before the response is answered (gRPC: UNAVAILABLE, or DEADLINE_EXCEEDED).

// streamKey is the context key of a stream's *streamState.
type streamKey struct{}

// streamState is what the HTTP/2 path keeps of a stream besides its
// exchange; the stream's handler goroutine owns it (the ReverseProxy calls
// back on that goroutine).
type streamState struct {
	x      *exchange
	sent   time.Time // when the stream was handed to the transport
	body   *heldBody // nil: no request body
	unsent bool      // the last attempt could not reach its replica and sent nothing: try another

	// clientGone is closed when the client cancels the stream or its
	// connection goes; unlike the stream's context, not at its deadline
	// (a queue timeout is not a client gone).
	clientGone <-chan struct{}
}

// stateOf is the state of the stream whose (proxy) request is r.
func stateOf(r *http.Request) *streamState { return r.Context().Value(streamKey{}).(*streamState) }

// h2Side is the activator's HTTP/2 server and upstream.
type h2Side struct {
	server *http.Server           // prior knowledge, from h2c.Split
	up     *h2c.UpgradeServer     // connections upgraded from HTTP/1.1 (Upgrade: h2c)
	rp     *httputil.ReverseProxy // to the replicas
}

// newH2Side builds the HTTP/2 side of a (nothing starts).
func (a *Activator) newH2Side() (*h2Side, error) {
	var dial func(ctx context.Context, network, addr string) (net.Conn, error)
	if d := a.opts.Dial; d != nil {
		dial = func(_ context.Context, _, addr string) (net.Conn, error) { return d(addr) }
	}
	s := &h2Side{}
	s.rp = &httputil.ReverseProxy{
		Rewrite:   a.rewriteStream,
		Transport: h2c.NewTransport(h2c.TransportOptions{DialTimeout: 5 * time.Second, IdleConnTimeout: 30 * time.Second, Dial: dial}),
		// 0, not -1: ReverseProxy flushes every write of a body of unknown
		// length (gRPC, streams) at once anyway, and a response without a
		// body (a Trailers-Only gRPC error) then leaves as it came, one
		// HEADERS frame with END_STREAM, instead of a flushed head and an
		// empty DATA frame, which gRPC clients read as a missing status.
		FlushInterval:  0,
		BufferPool:     copyBuffers{},
		ModifyResponse: a.streamHeadArrived,
		ErrorHandler:   a.streamFailed,
		ErrorLog:       debugStdLog(a.log),
	}
	o := h2c.ServerOptions{HeaderTimeout: a.opts.HeaderTimeout, IdleTimeout: a.opts.IdleTimeout,
		MaxHeaderBytes: proxycore.MaxRequestHeadBytes, MaxReceiveBufferPerStream: streamWindow,
		WriteTimeout: a.opts.WriteTimeout, ErrorLog: debugStdLog(a.log)}
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
		a.answerStreamProbe(w)
		return
	}
	x := a.exchanges.Get().(*exchange)
	rev, miss := a.routeStream(r, x)
	if rev == nil {
		a.metrics.results[resultNoRevision].Inc()
		h2c.WriteError(w, r, http.StatusNotFound, fmt.Sprintf("activator: no revision for host %q (%s)\n", r.Host, missWords[miss]))
		a.exchanges.Put(x)
		return
	}
	x.begin(rev, a.clock.Now())
	x.sizeStream(r)
	defer x.finish() // also when the proxy aborts the stream (a panic of http.ErrAbortHandler)
	ctx, cancel := a.streamDeadline(r, x)
	defer cancel()
	st := &streamState{x: x, clientGone: r.Context().Done()}
	r = r.WithContext(context.WithValue(ctx, streamKey{}, st))
	if r.Body != nil && r.Body != http.NoBody {
		st.body = &heldBody{ReadCloser: r.Body}
		r.Body = st.body
	}
	if x.r = rev.throttle.take(); x.r == nil && !a.queueStream(w, r, x) {
		return
	}
	// A client that does not take its answer loses the stream (and the
	// slot) after the write timeout.
	w = proxycore.ProgressWriter(w, a.opts.WriteTimeout)
	for {
		st.unsent = false
		a.h2s.rp.ServeHTTP(w, r)
		if !st.unsent || !a.replaceForStream(w, r, x) {
			return
		}
	}
}

// replaceForStream gives up a replica that could not be reached (nothing
// of the stream was sent: the body was never read) and takes another,
// waiting in the queue until the queue deadline, as replace does for
// HTTP/1.1. It reports false when it answered the stream itself.
func (a *Activator) replaceForStream(w http.ResponseWriter, r *http.Request, x *exchange) bool {
	a.metrics.retries.Inc()
	a.markDown(x.rev, x.r)
	x.rev.throttle.release(x.r)
	x.queueDeadline = x.deadline // it was admitted once: wait as long as it may
	if x.r = x.rev.throttle.take(); x.r != nil {
		return true
	}
	return a.queueStream(w, r, x)
}

// heldBody is a stream's request body as the proxy hands it on: Close is
// left to the server (so the body survives an attempt that failed), and it
// records whether anything read it (then the stream may have reached a
// replica, and is never sent again).
type heldBody struct {
	io.ReadCloser
	read bool
}

func (b *heldBody) Read(p []byte) (int, error) {
	b.read = true
	return b.ReadCloser.Read(p)
}

func (b *heldBody) Close() error { return nil }

// streamDeadline bounds a stream by the revision's timeout, or by its
// grpc-timeout when shorter (which also shortens its wait in the queue).
func (a *Activator) streamDeadline(r *http.Request, x *exchange) (context.Context, context.CancelFunc) {
	if d, ok := h2c.Timeout(r.Header.Get(h2c.GRPCTimeoutHeader)); ok {
		if dl := x.start.Add(d); dl.Before(x.deadline) {
			x.deadline = dl
		}
		if x.queueDeadline.After(x.deadline) {
			x.queueDeadline = x.deadline
		}
	}
	return context.WithDeadline(r.Context(), x.deadline)
}

// missWords say why a stream found no revision.
var missWords = map[routeMiss]string{missHost: "the host names no revision", missNamespace: "namespace not served",
	missRevision: "no such revision", missNone: ""}

// routeStream finds a stream's revision, as route does for HTTP/1.1.
func (a *Activator) routeStream(r *http.Request, x *exchange) (*revision, routeMiss) {
	return a.routeBy([]byte(r.Header.Get(RevisionHeader)), []byte(r.Host), x)
}

// queueStream waits for a slot, as queue does; the client's cancel
// (RST_STREAM, or its connection gone) is the stream context's end.
func (a *Activator) queueStream(w http.ResponseWriter, r *http.Request, x *exchange) bool {
	now := a.clock.Now()
	if len(x.rev.throttle.set.Load().replicas) == 0 {
		x.rev.m.heldAtZero(now)
		a.poke(x.rev, now)
	}
	t := a.timer(x.queueDeadline.Sub(now))
	rep, err := x.rev.throttle.wait(waitArgs{expire: t.C, gone: stateOf(r).clientGone, cost: x.cost, deadline: x.deadline})
	a.putTimer(t)
	done := a.clock.Now()
	x.rev.m.queueWait.Observe(done.Sub(now).Seconds())
	if err != nil {
		a.rejectStream(w, r, x, err)
		return false
	}
	x.rev.m.dispatched(done)
	x.r, x.queued = rep, true
	return true
}

// rejectStream answers a stream that got no replica (reject's HTTP/2 twin).
func (a *Activator) rejectStream(w http.ResponseWriter, r *http.Request, x *exchange, err error) {
	w.Header().Set("Retry-After", "1")
	var full *QueueFullError
	switch {
	case errors.As(err, &full):
		a.endStream(w, r, x, resultQueueFull, http.StatusServiceUnavailable, fmt.Sprintf(
			"activator: revision %s: overloaded: the %s queue is full (%d %s waiting); retry later", x.rev.key, full.Scope, full.Limit, full.Bound))
	case errors.Is(err, ErrQueueTimeout):
		a.endStream(w, r, x, resultQueueTimeout, http.StatusGatewayTimeout, fmt.Sprintf(
			"activator: revision %s: no replica became available in time; retry later", x.rev.key))
	case errors.Is(err, ErrRevisionGone):
		a.endStream(w, r, x, resultGone, http.StatusServiceUnavailable, fmt.Sprintf(
			"activator: revision %s was removed while the request waited", x.rev.key))
	case errors.Is(err, ErrClientGone):
		a.metrics.results[resultClientGone].Inc()
		x.rev.m.results[resultClientGone].Inc()
		w.WriteHeader(statusClientClosedRequest) // nobody reads it
	default:
		a.endStream(w, r, x, resultShutdown, http.StatusServiceUnavailable, "activator: shutting down; retry on another activator")
	}
}

// endStream answers a stream with the activator's own response and counts it.
func (a *Activator) endStream(w http.ResponseWriter, r *http.Request, x *exchange, res result, status int, msg string) {
	a.metrics.results[res].Inc()
	x.rev.m.results[res].Inc()
	h2c.WriteError(w, r, status, msg+"\n")
}

// rewriteStream addresses a stream to its replica, with the activator's
// marker and the client in X-Forwarded-For; the routing header is dropped.
func (a *Activator) rewriteStream(pr *httputil.ProxyRequest) {
	st := stateOf(pr.In)
	st.sent = a.clock.Now()
	x := st.x
	pr.Out.URL.Scheme, pr.Out.URL.Host = "http", x.r.addr
	pr.Out.Host = pr.In.Host
	h := pr.Out.Header
	h.Set(stats.ProxyHeaderName, string(a.marker))
	h.Del(RevisionHeader)
	ip, _, err := net.SplitHostPort(pr.In.RemoteAddr)
	if err != nil {
		ip = pr.In.RemoteAddr
	}
	if prior := pr.In.Header.Values("X-Forwarded-For"); len(prior) > 0 {
		ip = strings.Join(prior, ", ") + ", " + ip
	}
	h.Set("X-Forwarded-For", ip)
	if p := pr.In.Header.Get("X-Forwarded-Proto"); p != "" {
		h.Set("X-Forwarded-Proto", p)
	}
}

// streamHeadArrived counts a stream whose replica answered, and learns
// the time to answer where queueing happens (forwardOnce's rule).
func (a *Activator) streamHeadArrived(resp *http.Response) error {
	st := stateOf(resp.Request)
	x := st.x
	if x.queued || x.r.capacity.Load() > 0 {
		x.rev.throttle.observe(a.clock.Now().Sub(st.sent))
	}
	a.metrics.results[resultProxied].Inc()
	x.rev.m.results[resultProxied].Inc()
	return nil
}

// streamFailed answers a stream whose hop to the replica failed before
// its response started; a replica that could not be reached is taken out
// of rotation and probed again.
func (a *Activator) streamFailed(w http.ResponseWriter, r *http.Request, err error) {
	st := stateOf(r)
	x := st.x
	switch {
	case !a.clock.Now().Before(x.deadline.Add(-callDeadlineSlack)) || proxycore.IsTimeout(err):
		// Also a replica that reset the stream at the call's deadline: it
		// got the same grpc-timeout, and either timer may fire first.
		a.endStream(w, r, x, resultUpstreamTimeout, http.StatusGatewayTimeout, fmt.Sprintf(
			"activator: revision %s: the replica did not respond within the request timeout", x.rev.key))
	case r.Context().Err() != nil:
		a.metrics.results[resultClientGone].Inc()
		x.rev.m.results[resultClientGone].Inc()
		w.WriteHeader(statusClientClosedRequest)
	case proxycore.IsDialError(err) && (st.body == nil || !st.body.read):
		st.unsent = true // nothing was sent: serveStream tries another replica
	default:
		if proxycore.IsDialError(err) {
			a.markDown(x.rev, x.r)
		}
		a.log.Debug("proxying a stream failed", zap.String("revision", x.rev.key), zap.String("address", x.r.addr), zap.Error(err))
		a.endStream(w, r, x, resultUpstreamError, http.StatusBadGateway, fmt.Sprintf(
			"activator: revision %s: proxying to the replica at %s failed: %v", x.rev.key, x.r.addr, err))
	}
}

// callDeadlineSlack: a replica that gives up on a stream this close to
// its deadline gave up because of it.
const callDeadlineSlack = 50 * time.Millisecond

// answerStreamProbe answers K-Network-Probe as answerProbe does.
func (a *Activator) answerStreamProbe(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if a.Ready() {
		_, _ = w.Write([]byte("activator"))
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte("activator: not ready\n"))
}

// debugStdLog routes net/http's messages (client connection errors,
// aborted copies) to zap at Debug.
func debugStdLog(log *zap.Logger) *stdlog.Logger {
	l, err := zap.NewStdLogAt(log, zap.DebugLevel)
	if err != nil { // only for a level zap does not know
		panic(err)
	}
	return l
}

// copyBuffers pools ReverseProxy's body copy buffers.
type copyBuffers struct{}

var copyBufferPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (copyBuffers) Get() []byte  { return *copyBufferPool.Get().(*[]byte) }
func (copyBuffers) Put(b []byte) { copyBufferPool.Put(&b) }
