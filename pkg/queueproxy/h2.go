package queueproxy

import (
	"context"
	"errors"
	stdlog "log"
	"net"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/proxy/breaker"
	"ebb.dev/ebb/pkg/proxy/h2c"
	"ebb.dev/ebb/pkg/proxy/proxycore"
	"ebb.dev/ebb/pkg/stats"
)

// streamProxy serves the HTTP/2 side of the serving port (connections
// that start with the HTTP/2 preface, sorted by h2c.Split). Each stream is
// one request for everything the HTTP/1.1 path does (proxy.go): probes,
// the K-Proxy-Request marker, accounting, the breaker, the three timeouts
// (and a shorter grpc-timeout), the metrics. The hop is proxycore's
// StreamHop: the stream goes to the app as HTTP/2 cleartext (prior
// knowledge), the protocol the client spoke, as Knative's queue-proxy
// does; trailers (gRPC's status) pass through. With
// QUEUE_UPSTREAM_PROTOCOL=h2c it serves the HTTP/1.1 connections too
// (plain.go), each request one stream to the app. It is the hop's policy
// (proxycore.StreamPolicy): one upstream, no resend, the queue-proxy's
// answers.
type streamProxy struct {
	p      *proxy
	hop    *proxycore.StreamHop
	target string // the app: 127.0.0.1:USER_PORT
}

// newStreamProxy builds the HTTP/2 path of p to the app on 127.0.0.1.
func newStreamProxy(p *proxy, log *zap.Logger) *streamProxy {
	tr := h2c.NewTransport(h2c.TransportOptions{DialTimeout: p.headerBudget, IdleConnTimeout: 4 * time.Second})
	return &streamProxy{p: p, target: net.JoinHostPort("127.0.0.1", strconv.Itoa(p.cfg.UserPort)),
		hop: proxycore.NewStreamHop(proxycore.StreamHopOptions{Transport: tr, WriteTimeout: p.cfg.ClientWriteTimeout,
			ErrorLog: debugStdLog(log)})}
}

// ServeHTTP serves one stream.
func (s *streamProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := s.p
	if v := r.Header.Get(stats.ProbeHeaderName); v != "" {
		p.probeAnswer([]byte(v)).WriteHTTP(w)
		return
	}
	if isKubeletProbe([]byte(r.UserAgent())) {
		p.kubeletProbeAnswer().WriteHTTP(w)
		return
	}
	if err := h2c.ContentLengthError(r.Header); err != nil { // malformed: the app would get an empty body
		h2c.WriteError(w, r, http.StatusBadRequest, "queue-proxy: "+err.Error()+"\n")
		return
	}
	if err := h2c.AuthorityError(r.Host); err != nil { // as the HTTP/1.1 server refuses it; Go's client would rewrite it
		h2c.WriteError(w, r, http.StatusBadRequest, "queue-proxy: "+err.Error()+"\n")
		return
	}
	if err := h2c.ContentTypeError(r.Header); err != nil { // as the HTTP/1.1 server refuses it
		h2c.WriteError(w, r, http.StatusBadRequest, "queue-proxy: "+err.Error()+"\n")
		return
	}
	start := p.now()
	via := p.marker.m.Arrival([]byte(r.Header.Get(stats.ProxyHeaderName)))
	r.Header.Del(stats.ProxyHeaderName)
	if via == stats.ViaActivator { // Fail's proof that a stream never reached the app goes to the activator only
		r = r.WithContext(context.WithValue(r.Context(), viaActivatorKey{}, true))
	}
	p.acct.In(start, via)
	p.open.Add(1)
	sw := &statusWriter{ResponseWriter: w}
	st := s.hop.Begin(r, proxycore.StreamBounds{Start: start, Timeout: p.cfg.RequestTimeout, Head: p.headerBudget,
		Idle: p.cfg.IdleTimeout})
	holdsSlot, appStart := false, start
	defer func() { // also when the hop aborts the stream (a panic of http.ErrAbortHandler)
		st.End()
		if holdsSlot {
			p.breaker.Release()
		}
		now := p.now()
		p.acct.Out(now, via)
		p.open.Add(-1)
		p.metrics.observe(sw.status(), now.Sub(start))
		p.metrics.observeKnative(sw.status(), now, start, appStart, !sw.own)
	}()
	if p.breaker != nil {
		if err := p.breaker.Reserve(st.Context()); err != nil {
			s.reject(sw, st, err)
			return
		}
		holdsSlot = true
		appStart = p.now()
	}
	s.hop.Forward(sw, st, s)
}

// reject answers a stream the breaker did not admit.
func (s *streamProxy) reject(w http.ResponseWriter, st *proxycore.Stream, err error) {
	ownAnswer(w)
	if errors.Is(err, breaker.ErrQueueFull) {
		s.p.metrics.queueFull.Inc()
		w.Header().Set("Retry-After", "1")
		h2c.WriteError(w, st.Request(), http.StatusServiceUnavailable, string(s.p.bodies.queueFull))
		return
	}
	s.Fail(w, st.Request(), st.Why(err))
}

// Target implements proxycore.StreamPolicy: the app.
func (s *streamProxy) Target() string { return s.target }

// Rewrite implements proxycore.StreamPolicy: the marker was taken off
// before the stream began; nothing else is the queue-proxy's.
func (s *streamProxy) Rewrite(http.Header) {}

// Answered implements proxycore.StreamPolicy.
func (s *streamProxy) Answered(*http.Response) {}

// Retry implements proxycore.StreamPolicy: the app is the only upstream.
func (s *streamProxy) Retry(err error) error { return err }

// Fail implements proxycore.StreamPolicy: a timeout is a 504 (gRPC:
// DEADLINE_EXCEEDED), anything else a 502 (UNAVAILABLE). A client that
// went away gets nothing.
func (s *streamProxy) Fail(w http.ResponseWriter, r *http.Request, err error) {
	ownAnswer(w)
	p := s.p
	switch {
	case errors.Is(err, proxycore.ErrHeadTimeout):
		p.metrics.timeouts.Inc()
		h2c.WriteError(w, r, http.StatusGatewayTimeout, string(p.bodies.headerTimeout))
	case errors.Is(err, proxycore.ErrBodyTimeout):
		p.metrics.timeouts.Inc()
		h2c.WriteError(w, r, http.StatusGatewayTimeout, string(p.bodies.requestTO))
	case errors.Is(err, proxycore.ErrClientGone):
		w.WriteHeader(statusClientClosed) // nobody reads this
	case proxycore.IsDialError(err): // the HTTP/1.1 path's appRefused
		p.ready.appRefused()
		p.metrics.appRefused.Inc()
		w.Header().Set("Retry-After", "1")
		if r.Context().Value(viaActivatorKey{}) != nil {
			w.Header().Set(stats.NotSentHeaderName, string(p.marker.m.NotSent()))
		}
		h2c.WriteError(w, r, http.StatusServiceUnavailable, "queue-proxy: the app on 127.0.0.1:"+strconv.Itoa(p.cfg.UserPort)+
			" cannot be reached ("+err.Error()+"): the request did not reach it; retry it")
	default:
		p.log.Debug("proxy to app failed", zap.Error(err))
		h2c.WriteError(w, r, http.StatusBadGateway,
			"queue-proxy: cannot proxy to the app on 127.0.0.1:"+strconv.Itoa(p.cfg.UserPort)+": "+err.Error())
	}
}

// viaActivatorKey marks, in a stream's context, that it carried the
// activator's armed marker.
type viaActivatorKey struct{}

// statusClientClosed is recorded for a stream its client cancelled
// (nginx's 499): the metrics count it apart from 5xx.
const statusClientClosed = 499

// statusWriter records the status a stream was answered with. Unwrap
// lets http.ResponseController reach the server's flusher.
type statusWriter struct {
	http.ResponseWriter
	code int
	own  bool // the queue-proxy answered, not the app
}

// ownAnswer marks a stream's answer as the queue-proxy's own.
func ownAnswer(w http.ResponseWriter) {
	if sw, ok := w.(*statusWriter); ok {
		sw.own = true
	}
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

// debugStdLog routes the messages of net/http's server and ReverseProxy
// (client connection errors, aborted copies) to zap at Debug.
func debugStdLog(log *zap.Logger) *stdlog.Logger {
	l, err := zap.NewStdLogAt(log, zap.DebugLevel)
	if err != nil { // only for a level zap does not know
		panic(err)
	}
	return l
}
