package queueproxy

import (
	"context"
	"errors"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/breaker"
	"ebb.dev/ebb/pkg/h2c"
	"ebb.dev/ebb/pkg/proxycore"
	"ebb.dev/ebb/pkg/stats"
)

// streamProxy serves the HTTP/2 side of the serving port (connections
// that start with the HTTP/2 preface, sorted by h2c.Split). Each stream is
// one request for everything the HTTP/1.1 path does (proxy.go): probes,
// the K-Proxy-Request marker, accounting, the breaker, the three timeouts
// (and a shorter grpc-timeout), the metrics. It is forwarded to the app as
// HTTP/2 cleartext (prior knowledge), the protocol the client spoke, as
// Knative's queue-proxy does; trailers (gRPC's status) pass through. With
// QUEUE_UPSTREAM_PROTOCOL=h2c it serves the HTTP/1.1 connections too
// (plain.go), each request one stream to the app.
type streamProxy struct {
	p  *Proxy
	rp *httputil.ReverseProxy
}

// streamKey is the context key of a stream's *stream.
type streamKey struct{}

// stream is one HTTP/2 stream on its way. Its handler goroutine owns it;
// the timer's function only cancels the context.
type stream struct {
	cancel context.CancelCauseFunc
	timer  *time.Timer // the first response byte's deadline, then the idle timeout
	idle   time.Duration

	callDeadline time.Time // arrival + grpc-timeout; zero: none
}

// newStreamProxy builds the HTTP/2 path of p to the app on 127.0.0.1.
func newStreamProxy(p *Proxy, log *zap.Logger) *streamProxy {
	target := &url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(p.cfg.UserPort))}
	tr := h2c.NewTransport(h2c.TransportOptions{DialTimeout: p.headerBudget, IdleConnTimeout: 4 * time.Second})
	s := &streamProxy{p: p}
	s.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
			setForwardedH2(pr.Out.Header, pr.In)
		},
		Transport: tr,
		// 0, not -1: ReverseProxy flushes every write of a body of unknown
		// length (gRPC, streams) at once anyway, and a response without a
		// body (a Trailers-Only gRPC error) then leaves as it came, one
		// HEADERS frame with END_STREAM, instead of a flushed head and an
		// empty DATA frame, which gRPC clients read as a missing status.
		FlushInterval:  0,
		BufferPool:     copyBuffers{},
		ModifyResponse: s.headArrived,
		ErrorHandler:   s.upstreamFailed,
		ErrorLog:       debugStdLog(log),
	}
	return s
}

// ServeHTTP serves one stream.
func (s *streamProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := s.p
	if v := r.Header.Get(stats.ProbeHeaderName); v != "" {
		s.answerProbe(w, v)
		return
	}
	if isKubeletProbe([]byte(r.UserAgent())) {
		s.answerProbe(w, stats.ProbeHeaderValue)
		return
	}
	start := p.now()
	via := p.marker.m.Arrival([]byte(r.Header.Get(stats.ProxyHeaderName)))
	r.Header.Del(stats.ProxyHeaderName)
	p.acct.In(start, via)
	p.open.Add(1)
	sw := &statusWriter{ResponseWriter: w}
	st := &stream{idle: p.cfg.IdleTimeout}
	holdsSlot := false
	defer func() { // also when the proxy aborts the stream (a panic of http.ErrAbortHandler)
		st.timer.Stop()
		st.cancel(nil)
		if holdsSlot {
			p.breaker.Release()
		}
		now := p.now()
		p.acct.Out(now, via)
		p.open.Add(-1)
		p.metrics.observe(sw.status(), now.Sub(start))
	}()
	ctx := s.bound(r, st, start)
	if p.breaker != nil {
		if err := p.breaker.Reserve(ctx); err != nil {
			s.reject(sw, r.WithContext(ctx), err)
			return
		}
		holdsSlot = true
	}
	// A client that does not take its answer loses the stream (and the
	// slot) after the write timeout.
	s.rp.ServeHTTP(proxycore.ProgressWriter(sw, p.cfg.ClientWriteTimeout), r.WithContext(ctx))
}

// bound gives a stream its deadlines, all from arrival as on HTTP/1.1:
// the request timeout, or the call's grpc-timeout when shorter, for the
// whole stream; the first response byte's (the shortest of the three
// timeouts) until the head arrives.
func (s *streamProxy) bound(r *http.Request, st *stream, start time.Time) context.Context {
	p := s.p
	whole := p.cfg.RequestTimeout
	if d, ok := h2c.Timeout(r.Header.Get(h2c.GRPCTimeoutHeader)); ok && d < whole {
		whole = d
		st.callDeadline = start.Add(d)
	}
	ctx, cancelWhole := context.WithDeadlineCause(r.Context(), start.Add(whole), errRequestTimeout)
	ctx, cancel := context.WithCancelCause(ctx)
	st.cancel = func(cause error) { cancel(cause); cancelWhole() }
	first := min(p.headerBudget, whole)
	st.timer = time.AfterFunc(start.Add(first).Sub(p.now()), func() { cancel(proxycore.ErrHeadTimeout) })
	return context.WithValue(ctx, streamKey{}, st)
}

// errRequestTimeout: the stream's whole deadline passed (the request
// timeout, or the call's grpc-timeout).
var errRequestTimeout = errors.New("the stream's deadline passed")

// headArrived stops the first byte's deadline; with an idle timeout, the
// body's reads restart it.
func (s *streamProxy) headArrived(resp *http.Response) error {
	st, _ := resp.Request.Context().Value(streamKey{}).(*stream)
	if st == nil {
		return nil
	}
	st.timer.Stop()
	if st.idle > 0 && resp.Body != nil && resp.Body != http.NoBody {
		st.timer.Reset(st.idle)
		resp.Body = &idleBody{ReadCloser: resp.Body, st: st}
	}
	return nil
}

// idleBody restarts the idle timeout on every read that brought bytes.
type idleBody struct {
	io.ReadCloser
	st *stream
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.st.timer.Reset(b.st.idle)
	}
	return n, err
}

// reject answers a stream the breaker did not admit.
func (s *streamProxy) reject(w http.ResponseWriter, r *http.Request, err error) {
	p := s.p
	switch {
	case errors.Is(err, breaker.ErrQueueFull):
		p.metrics.queueFull.Inc()
		w.Header().Set("Retry-After", "1")
		h2c.WriteError(w, r, http.StatusServiceUnavailable, string(p.bodies.queueFull))
	default:
		s.upstreamFailed(w, r, err)
	}
}

// upstreamFailed answers a stream whose hop to the app failed before the
// response started (or that timed out waiting for a slot): a timeout is a
// 504 (gRPC: DEADLINE_EXCEEDED), anything else a 502 (UNAVAILABLE). A
// client that went away gets nothing.
func (s *streamProxy) upstreamFailed(w http.ResponseWriter, r *http.Request, err error) {
	p := s.p
	switch cause := context.Cause(r.Context()); {
	case errors.Is(cause, proxycore.ErrHeadTimeout):
		p.metrics.timeouts.Inc()
		h2c.WriteError(w, r, http.StatusGatewayTimeout, string(p.bodies.headerTimeout))
	case errors.Is(cause, errRequestTimeout):
		p.metrics.timeouts.Inc()
		h2c.WriteError(w, r, http.StatusGatewayTimeout, string(p.bodies.requestTO))
	case cause != nil:
		w.WriteHeader(statusClientClosed) // the client cancelled: nobody reads this
	case s.appHitDeadline(r):
		p.metrics.timeouts.Inc()
		h2c.WriteError(w, r, http.StatusGatewayTimeout, string(p.bodies.requestTO))
	default:
		p.log.Debug("proxy to app failed", zap.Error(err))
		h2c.WriteError(w, r, http.StatusBadGateway,
			"queue-proxy: cannot proxy to the app on 127.0.0.1:"+strconv.Itoa(p.cfg.UserPort)+": "+err.Error())
	}
}

// callDeadlineSlack: an app that gives up on a call this close to its
// grpc-timeout gave up because of it. The app gets the same grpc-timeout
// and times it from a little later, but timers fire late on a busy
// machine, so either side may be first.
const callDeadlineSlack = 50 * time.Millisecond

// appHitDeadline reports whether the app ended a gRPC call (a reset
// stream) at its deadline: the client must then see DEADLINE_EXCEEDED,
// not UNAVAILABLE.
func (s *streamProxy) appHitDeadline(r *http.Request) bool {
	st, _ := r.Context().Value(streamKey{}).(*stream)
	return st != nil && !st.callDeadline.IsZero() && !s.p.now().Before(st.callDeadline.Add(-callDeadlineSlack))
}

// statusClientClosed is recorded for a stream its client cancelled
// (nginx's 499): the metrics count it apart from 5xx.
const statusClientClosed = 499

func (s *streamProxy) answerProbe(w http.ResponseWriter, value string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	switch {
	case value != stats.ProbeHeaderValue:
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, "queue-proxy: unexpected "+stats.ProbeHeaderName+" value, want "+stats.ProbeHeaderValue+"\n")
	case s.p.ready.Ready():
		_, _ = w.Write(s.p.bodies.probeOK)
	default:
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write(s.p.bodies.notReady)
	}
}

// setForwardedH2 appends the client to X-Forwarded-For and keeps the
// client's X-Forwarded-Proto (http when absent), as the HTTP/1.1 path.
func setForwardedH2(out http.Header, in *http.Request) {
	ip, _, err := net.SplitHostPort(in.RemoteAddr)
	if err != nil {
		ip = in.RemoteAddr
	}
	if prior := in.Header.Values("X-Forwarded-For"); len(prior) > 0 {
		ip = joinComma(prior) + ", " + ip
	}
	out.Set("X-Forwarded-For", ip)
	proto := in.Header.Get("X-Forwarded-Proto")
	if proto == "" {
		proto = "http"
	}
	out.Set("X-Forwarded-Proto", proto)
}

func joinComma(vs []string) string {
	s := vs[0]
	for _, v := range vs[1:] {
		s += ", " + v
	}
	return s
}

// statusWriter records the status a stream was answered with. Unwrap
// lets http.ResponseController reach the server's flusher.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 && code >= 200 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// status is the recorded status; a stream aborted before any answer
// counts as a 502.
func (w *statusWriter) status() int {
	if w.code == 0 {
		return http.StatusBadGateway
	}
	return w.code
}

// copyBuffers pools ReverseProxy's body copy buffers.
type copyBuffers struct{}

var copyBufferPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (copyBuffers) Get() []byte  { return *copyBufferPool.Get().(*[]byte) }
func (copyBuffers) Put(b []byte) { copyBufferPool.Put(&b) }

// debugStdLog routes the messages of net/http's server and ReverseProxy
// (client connection errors, aborted copies) to zap at Debug.
func debugStdLog(log *zap.Logger) *stdlog.Logger {
	l, err := zap.NewStdLogAt(log, zap.DebugLevel)
	if err != nil { // only for a level zap does not know
		panic(err)
	}
	return l
}
