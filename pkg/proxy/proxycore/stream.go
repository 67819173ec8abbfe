package proxycore

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"time"

	"ebb.dev/ebb/pkg/proxy/h2c"
)

// StreamHop is the HTTP/2 half of the hop both proxies share: one stream
// (an HTTP/2 stream, or a request of the queue-proxy's net/http HTTP/1.1
// server when its app speaks only h2c) on its way to an h2c upstream and
// back. It is Go's httputil.ReverseProxy, configured once with the rules
// the HTTP/1.1 Trip keeps: the hop-by-hop fields (ReverseProxy's own list,
// RFC 9110 §7.6.1), X-Forwarded-For and -Proto, the deadlines of the
// stream from its arrival (its grpc-timeout included), the first byte's
// and the upstream's silence, each write to the client bounded by the
// write timeout (ProgressWriter), a body of unknown length flushed at
// every write and a Trailers-Only answer left as one HEADERS frame, and
// the retry rule: a stream goes again, to the policy's next upstream, only
// when nothing of it was sent (the dial failed and its body was never
// read; the transport itself resends where the upstream said it did not
// process a stream). The proxy's StreamPolicy chooses the upstream, adds
// its own fields, counts, and words the errors.
type StreamHop struct {
	rp           *httputil.ReverseProxy
	writeTimeout time.Duration
}

// StreamHopOptions configure a StreamHop.
type StreamHopOptions struct {
	// Transport reaches the upstreams (h2c.NewTransport). Required.
	Transport http.RoundTripper
	// WriteTimeout bounds each write of an answer to the client
	// (ProgressWriter). Must be > 0.
	WriteTimeout time.Duration
	// ErrorLog gets ReverseProxy's messages (aborted copies); nil: the
	// standard logger.
	ErrorLog *log.Logger
}

// StreamPolicy is a proxy's say in a stream's trip.
type StreamPolicy interface {
	// Target is the upstream (host:port) of the next attempt.
	Target() string
	// Rewrite edits the header going upstream: the proxy's own fields
	// (markers) in, its routing fields out. X-Forwarded-* are set already.
	Rewrite(out http.Header)
	// Answered is called when the upstream's head arrived.
	Answered(resp *http.Response)
	// Retry is asked when nothing of the stream reached an upstream (the
	// dial failed, its body unread): nil sends it again, to Target; an
	// error ends the stream (Fail).
	Retry(err error) error
	// Fail answers a stream whose trip failed before its answer started:
	// err is ErrHeadTimeout (the first byte was due), ErrBodyTimeout (the
	// stream's deadline passed, or the upstream gave up at it),
	// ErrClientGone (nobody reads the answer), or the failure itself.
	Fail(w http.ResponseWriter, r *http.Request, err error)
}

// ErrClientGone: the client cancelled the stream, or its connection went.
var ErrClientGone = errors.New("the client went away")

// NewStreamHop builds a StreamHop.
func NewStreamHop(o StreamHopOptions) *StreamHop {
	h := &StreamHop{writeTimeout: o.WriteTimeout}
	h.rp = &httputil.ReverseProxy{
		Rewrite:   rewrite,
		Transport: o.Transport,
		// 0, not -1: ReverseProxy flushes every write of a body of unknown
		// length (gRPC, streams) at once anyway, and an answer without a
		// body (a Trailers-Only gRPC error) then leaves as it came, one
		// HEADERS frame with END_STREAM, instead of a flushed head and an
		// empty DATA frame, which gRPC clients read as a missing status.
		FlushInterval:  0,
		BufferPool:     copyBuffers{},
		ModifyResponse: headArrived,
		ErrorHandler:   failed,
		ErrorLog:       o.ErrorLog,
	}
	return h
}

// StreamBounds are a stream's deadlines, counted from its arrival.
type StreamBounds struct {
	Start time.Time
	// Timeout bounds the whole stream; a shorter grpc-timeout wins. Must be > 0.
	Timeout time.Duration
	// Head bounds the wait for the first byte of the answer (0: Timeout).
	Head time.Duration
	// Idle bounds each silence of the upstream within the answer (0: none).
	Idle time.Duration
}

// Stream is one stream on its way, from its arrival (Begin: its deadlines
// run from then, the proxy's queueing included) to its end (End). Its
// handler goroutine owns it; its timer only cancels its context.
type Stream struct {
	r          *http.Request // with the bounded context
	policy     StreamPolicy
	cancel     context.CancelCauseFunc
	timer      *time.Timer // the first byte's deadline, then the idle timeout; nil: none
	idle       time.Duration
	deadline   time.Time // the stream's whole deadline
	clientGone <-chan struct{}
	body       *heldBody // nil: no request body
	unsent     error     // the last attempt failed with nothing sent
	// NotSent is how the upstream says it did not pass the stream on (set
	// by the proxy after Begin; the zero value trusts nothing).
	NotSent NotSentMark
}

// streamKey is the context key of a stream's *Stream.
type streamKey struct{}

// errStreamDeadline is the cause of a stream's context at its deadline.
var errStreamDeadline = errors.New("the stream's deadline passed")

// Begin starts r's trip: its context ends at its deadline (the request
// timeout, or the call's grpc-timeout when shorter) and, until the head
// arrives, at the first byte's. The proxy waits for a slot with
// Context(), then Forwards, then Ends.
func (h *StreamHop) Begin(r *http.Request, b StreamBounds) *Stream {
	s := &Stream{idle: b.Idle, clientGone: r.Context().Done()}
	whole := b.Timeout
	if d, ok := h2c.Timeout(r.Header.Get(h2c.GRPCTimeoutHeader)); ok && d < whole {
		whole = d
	}
	s.deadline = b.Start.Add(whole)
	ctx, cancelWhole := context.WithDeadlineCause(r.Context(), s.deadline, errStreamDeadline)
	ctx, cancel := context.WithCancelCause(ctx)
	s.cancel = func(cause error) { cancel(cause); cancelWhole() }
	if b.Head > 0 && b.Head < whole { // else the whole deadline is the first byte's too
		s.timer = time.AfterFunc(time.Until(b.Start.Add(b.Head)), func() { cancel(ErrHeadTimeout) })
	}
	s.r = r.WithContext(context.WithValue(ctx, streamKey{}, s))
	if r.Body != nil && r.Body != http.NoBody {
		s.body = &heldBody{ReadCloser: r.Body}
		s.r.Body = s.body
	}
	return s
}

// Context ends at the stream's deadlines, or when its client goes.
func (s *Stream) Context() context.Context { return s.r.Context() }

// Request is the stream's request, with its bounded context.
func (s *Stream) Request() *http.Request { return s.r }

// Deadline is the stream's whole deadline.
func (s *Stream) Deadline() time.Time { return s.deadline }

// ClientGone is closed when the client cancels the stream or its
// connection goes; unlike Context, not at the stream's deadline (a
// deadline in a queue is a timeout, not a client gone).
func (s *Stream) ClientGone() <-chan struct{} { return s.clientGone }

// End releases the stream's timer and context.
func (s *Stream) End() {
	if s.timer != nil {
		s.timer.Stop()
	}
	s.cancel(nil)
}

// Forward sends the stream upstream and its answer to w, through the
// policy; an attempt that sent nothing goes again while the policy's
// Retry allows. Every failure is answered (Fail). It returns when the
// answer is written; a copy the client or the upstream broke off aborts
// the handler (http.ErrAbortHandler), as ReverseProxy does.
func (h *StreamHop) Forward(w http.ResponseWriter, s *Stream, p StreamPolicy) {
	s.policy = p
	w = ProgressWriter(w, s.r, h.writeTimeout) // a client that does not take its answer loses the stream
	for {
		s.unsent = nil
		h.rp.ServeHTTP(w, s.r)
		if s.unsent == nil {
			return
		}
		if err := p.Retry(s.unsent); err != nil {
			p.Fail(w, s.r, err)
			return
		}
	}
}

func streamOf(r *http.Request) *Stream { return r.Context().Value(streamKey{}).(*Stream) }

// rewrite addresses a stream to the policy's upstream, with the client
// in X-Forwarded-For (all its lines joined, the address appended once)
// and X-Forwarded-Proto (kept, else http). ReverseProxy has dropped the
// hop-by-hop fields and the client's X-Forwarded-* from the outgoing
// request before it calls this.
func rewrite(pr *httputil.ProxyRequest) {
	s := streamOf(pr.In)
	pr.Out.URL.Scheme, pr.Out.URL.Host = "http", s.policy.Target()
	pr.Out.Host = pr.In.Host
	ip, _, err := net.SplitHostPort(pr.In.RemoteAddr)
	if err != nil {
		ip = pr.In.RemoteAddr
	}
	xff := ip
	if prior := pr.In.Header.Values("X-Forwarded-For"); len(prior) > 0 {
		xff = ""
		for _, v := range prior {
			xff += v + ", "
		}
		xff += ip
	}
	h := pr.Out.Header
	h.Set("X-Forwarded-For", xff)
	proto := pr.In.Header.Get("X-Forwarded-Proto")
	if proto == "" {
		proto = "http"
	}
	h.Set("X-Forwarded-Proto", proto)
	s.policy.Rewrite(h)
}

// headArrived stops the first byte's deadline (with an idle bound, the
// body's reads restart it) and tells the policy.
func headArrived(resp *http.Response) error {
	s := streamOf(resp.Request)
	if s.NotSent.checkHTTP(resp.Header) {
		return errNotSent // failed then sends it again, or the policy answers it
	}
	if s.timer != nil {
		s.timer.Stop()
	}
	if s.idle > 0 && resp.Body != nil && resp.Body != http.NoBody {
		// Past the head, a cancel aborts the copy whatever its cause.
		s.timer = time.AfterFunc(s.idle, func() { s.cancel(ErrBodyTimeout) })
		resp.Body = &idleBody{ReadCloser: resp.Body, s: s}
	}
	s.policy.Answered(resp)
	return nil
}

// idleBody restarts the idle timeout on every read that brought bytes.
type idleBody struct {
	io.ReadCloser
	s *Stream
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.s.timer.Reset(b.s.idle)
	}
	return n, err
}

// deadlineSlack: an upstream that gives up on a stream this close to its
// deadline gave up because of it. It got the same grpc-timeout and times
// it from a little later, but timers fire late on a busy machine, so
// either side may be first.
const deadlineSlack = 50 * time.Millisecond

// failed classifies a failed attempt (ReverseProxy's ErrorHandler): an
// attempt that sent nothing is left to Forward to retry; the rest is
// answered by the policy.
func failed(w http.ResponseWriter, r *http.Request, err error) {
	s := streamOf(r)
	switch err = s.Why(err); {
	case (IsDialError(err) || IsNotSent(err)) && (s.body == nil || !s.body.read):
		s.unsent = err // nothing was sent (to the app, for ErrNotSent): Forward asks the policy
	default:
		s.policy.Fail(w, r, err)
	}
}

// Why says why the stream failed with err: ErrHeadTimeout (its first
// byte's deadline), ErrBodyTimeout (its whole deadline, or an upstream
// that gave up at it), ErrClientGone, or err itself. A proxy that fails a
// stream before its trip (a slot that never came) words it by this too.
func (s *Stream) Why(err error) error {
	switch cause := context.Cause(s.r.Context()); {
	case errors.Is(cause, ErrHeadTimeout):
		return ErrHeadTimeout
	case errors.Is(cause, errStreamDeadline):
		return ErrBodyTimeout
	case cause != nil:
		return ErrClientGone
	case !time.Now().Before(s.deadline.Add(-deadlineSlack)):
		return ErrBodyTimeout // the upstream reset the stream at its deadline
	case IsTimeout(err) && !IsDialError(err):
		return ErrBodyTimeout
	}
	// A dial that timed out before any deadline (the transport's
	// DialTimeout) stays a dial error: nothing was sent, the policy may
	// send the stream elsewhere.
	return err
}

// heldBody is a stream's request body as the hop hands it on: Close is
// left to the server (so the body survives an attempt that failed), and it
// records whether anything read it (then the stream may have reached an
// upstream, and is never sent again).
type heldBody struct {
	io.ReadCloser
	read bool
}

func (b *heldBody) Read(p []byte) (int, error) {
	b.read = true
	return b.ReadCloser.Read(p)
}

func (b *heldBody) Close() error { return nil }

// copyBuffers pools ReverseProxy's body copy buffers.
type copyBuffers struct{}

var copyBufferPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (copyBuffers) Get() []byte  { return *copyBufferPool.Get().(*[]byte) }
func (copyBuffers) Put(b []byte) { copyBufferPool.Put(&b) }
