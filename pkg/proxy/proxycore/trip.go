package proxycore

import (
	"bufio"
	"errors"
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// Policy is a proxy's say in a trip; the Trip runs it. The proxies
// implement it on their pooled per-request state.
type Policy interface {
	// Upstream is the upstream of the next attempt (the activator: the
	// replica whose slot the request holds) and the deadlines of the
	// exchange with it.
	Upstream() (*fasthttp.HostClient, Deadlines)
	// Retry is asked when an attempt failed with err and the retry rule
	// (Outbound.MaySendAgain) lets the request be sent again: after a dial
	// error, or after a connection error once the trip has already sent it
	// again on a fresh connection to the same upstream (as a keep-alive
	// connection the upstream closed while idle would fail). nil sends it
	// again (to the upstream Upstream then names); an error ends the trip
	// with it.
	Retry(err error) error
	// OpenTunnel is called when an upgrade's upstream answered 101, before
	// the client's connection is taken over; false refuses the tunnel
	// (Forward then returns ErrTunnelRefused).
	OpenTunnel(upstream net.Conn) bool
	// Done ends a trip that outlived Forward (pending): the streamed body
	// was written to its end or given up (the client went away, or took
	// too long), or the tunnel closed. status is the response's.
	Done(status int)
}

// Deadlines bound the phases of an exchange with an upstream in which the
// upstream is the one to act.
type Deadlines struct {
	Write time.Time // writing the request (its streamed body included)
	Head  time.Time // the head of the answer; also the wait for a connection
	Body  time.Time // the last byte of the answer's body
	// Idle, when > 0, also bounds each read of the body: the upstream may
	// not be silent longer (the queue-proxy's REVISION_IDLE_TIMEOUT_SECONDS).
	Idle time.Duration
}

// Errors of a trip that ran out of time (IsTimeout reports both).
var (
	// ErrHeadTimeout: no head of an answer by Deadlines.Head (nor a
	// connection to send the request on).
	ErrHeadTimeout error = &timeoutError{"the upstream did not start its answer in time"}
	// ErrBodyTimeout: the request could not be written by Deadlines.Write,
	// or the body of the answer read by Deadlines.Body (or within Idle).
	ErrBodyTimeout error = &timeoutError{"the upstream did not finish its answer in time"}
)

type timeoutError struct{ msg string }

func (e *timeoutError) Error() string { return e.msg }
func (e *timeoutError) Timeout() bool { return true }

// maxStaleConns bounds the pooled connections found closed (and dropped)
// before one request is written: an upstream that closed many idle
// connections at once.
const maxStaleConns = 8

// Trip is one HTTP/1.1 request's whole trip from a fasthttp server's
// RequestCtx to an upstream and back, the hop both proxies share (Go's
// httputil.ReverseProxy is the model): the head for the upstream (the
// hop-by-hop fields, X-Forwarded-*), the attempts and the retry rule, a
// body read whole or streamed, an upgrade only on 101, the deadlines of
// every phase, and the rule for a client body left unread. The proxy
// supplies the policy: which upstream, how many tries, what to count,
// and the words of its own answers.
//
// A Trip lives in a proxy's pooled per-request state (Init once); the
// goroutine serving the request owns it, then, for a pending trip (a
// streamed body, a tunnel), the one writing the response, until Done.
// It implements the body stream fasthttp reads a streamed answer from.
type Trip struct {
	Head RequestHead // Scan fills it
	Out  Outbound    // the request on its way: what the retry rule knows
	// NotSent is how the upstream says it did not pass the request on
	// (set by the proxy before Forward; the zero value trusts nothing).
	NotSent NotSentMark

	policy     Policy
	checks     *ConnChecks // counts connections closed for not being clean; nil: none
	maxBuffer  int         // response bodies with a Content-Length up to this are read whole
	scratch    []byte      // header edits
	closeAfter bool        // the client asked to close its connection after this exchange

	// answer reads the upstream's answer: its first read writes the
	// request Out held (Outbound.Answer).
	answer answerConn

	// A streamed answer: the connection it holds until Done.
	hc       *fasthttp.HostClient
	up       pooledConn
	conn     net.Conn
	br       *bufio.Reader
	keep     bool // the upstream keeps the connection open
	body     responseBody
	deadline Deadlines
	status   int
	readErr  error // a body read deadline could not be set
}

// Init binds a Trip to its policy and sets the largest response body read
// whole (larger, chunked and close-delimited bodies stream; the activator
// frees a replica's connection sooner with a smaller one). checks counts
// the upstream connections closed for not being clean (clean.go); nil
// counts nothing.
func (t *Trip) Init(p Policy, maxBufferedResponse int, checks *ConnChecks) {
	t.policy, t.maxBuffer, t.checks = p, maxBufferedResponse, checks
}

// Scan reads the request head once (RequestHead.Scan).
func (t *Trip) Scan(h *fasthttp.RequestHeader) { t.Head.scan(h) }

// Forward sends ctx's request upstream and sets ctx.Response to the
// answer. pending says the trip goes on after the handler returns (a
// streamed body, a tunnel) and ends with the policy's Done; otherwise the
// answer is complete. An error means no answer: the proxy answers the
// client itself (after Settle). The request head is changed for the
// upstream (hop-by-hop fields, X-Forwarded-*); the proxy's own edits
// (markers) come before.
func (t *Trip) Forward(ctx *fasthttp.RequestCtx) (pending bool, err error) {
	t.closeAfter, t.scratch = prepareRequest(ctx, &t.Head, t.scratch)
	pending, err = t.forward(ctx)
	if t.closeAfter {
		ctx.SetConnectionClose() // after the answer, whatever it is (fasthttp sees only an exact "close")
	}
	return pending, err
}

func (t *Trip) forward(ctx *fasthttp.RequestCtx) (pending bool, err error) {
	req := &ctx.Request
	req.UseHostHeader = true
	req.URI().DisablePathNormalizing = true
	t.Out.begin(req)
	t.Out.bodyFrom(ctx.Conn())
	for sameUpstream := true; ; {
		hc, d := t.policy.Upstream()
		if t.Head.upgrade {
			pending, err = t.upgrade(ctx, hc, d)
		} else {
			pending, err = t.attempt(hc, d, req, &ctx.Response)
		}
		switch {
		case err == nil || errors.Is(err, ErrHeadTimeout) || errors.Is(err, ErrBodyTimeout) || !t.Out.maySendAgain(err):
			return pending, err // a deadline passed: no time is left for another try
		case sameUpstream && !IsDialError(err) && !IsNotSent(err):
			sameUpstream = false // once more on a fresh connection: it may have been a pooled one the upstream closed
		default:
			if err = t.policy.Retry(err); err != nil {
				return false, err
			}
			sameUpstream = true // the policy's pick (another replica, perhaps)
		}
		ctx.Response.Reset()
	}
}

// attempt is one attempt on one upstream: past pooled connections found
// closed (nothing written on them), on one connection.
func (t *Trip) attempt(hc *fasthttp.HostClient, d Deadlines, req *fasthttp.Request, resp *fasthttp.Response) (bool, error) {
	for stale := 0; ; stale++ {
		streamed, err := t.try(hc, d, req, resp)
		if errors.Is(err, errUnsolicited) {
			t.checks.unsolicited()
		}
		if !errors.Is(err, errStaleConn) || stale == maxStaleConns {
			return streamed, err
		}
	}
}

// try sends req on one connection and reads the answer's head, and its
// body if it is read whole.
func (t *Trip) try(hc *fasthttp.HostClient, d Deadlines, req *fasthttp.Request, resp *fasthttp.Response) (bool, error) {
	up, conn, err := t.send(hc, d, req, false)
	if err != nil {
		return false, err
	}
	br := t.answerReader(hc, conn)
	if err := readHead(resp, br, req.Header.IsHead(), false); err != nil {
		hc.ReleaseReader(br)
		conns.close(hc, up)
		return false, t.answerError(err)
	}
	if t.NotSent.check(&resp.Header) {
		done(hc, up, br, false) // its short body unread: the connection cannot be reused
		return false, errNotSent
	}
	var keep bool
	keep, t.scratch = prepareResponse(&resp.Header, t.scratch)
	if keep && !t.framingClear(resp) {
		keep = false
		t.checks.ambiguous()
	}
	switch KindOf(req, resp, t.maxBuffer) {
	case noBody:
		noBodyFraming(req, resp)
		t.release(hc, up, br, keep)
		return false, nil
	case buffered:
		if err := setBodyDeadline(conn, d); err != nil {
			done(hc, up, br, false)
			return false, err
		}
		err := resp.ReadBody(br, t.maxBuffer)
		t.release(hc, up, br, keep && err == nil)
		return false, bodyError(err)
	}
	if err := setBodyDeadline(conn, d); err != nil {
		done(hc, up, br, false)
		return false, err
	}
	cl := resp.Header.ContentLength()
	t.hc, t.up, t.conn, t.br, t.keep, t.deadline, t.status, t.readErr = hc, up, conn, br, keep, d, resp.StatusCode(), nil
	t.body.reset(br, cl)
	t.body.forwardTrailers(&resp.Header) // a chunked body's trailers: fasthttp writes them after it
	resp.SetBodyStream(t, max(cl, -1))   // -1: chunked to the client
	resp.ImmediateHeaderFlush = true     // long answers: the client sees the head at once
	return true, nil
}

// send takes a connection of hc (a fresh one, never pooled again, with
// connectionClose) and writes req on it.
func (t *Trip) send(hc *fasthttp.HostClient, d Deadlines, req *fasthttp.Request, connectionClose bool) (pooledConn, net.Conn, error) {
	wait := time.Until(d.Head)
	if wait <= 0 {
		return nil, nil, ErrHeadTimeout
	}
	up, err := conns.acquire(hc, wait, connectionClose) // dial and pool wait
	switch {
	case err != nil && IsDialError(err):
		return nil, nil, err // nothing was sent: the policy may try another upstream
	case err != nil:
		return nil, nil, headError(err)
	}
	conn := up.Conn()
	if err := setDeadlines(conn, d.Write, d.Head); err != nil {
		conns.close(hc, up)
		return nil, nil, err
	}
	if err := t.Out.write(hc, conn, req); err != nil {
		conns.close(hc, up)
		if IsTimeout(err) {
			return nil, nil, ErrBodyTimeout
		}
		return nil, nil, err
	}
	return up, conn, nil
}

// answerReader is the reader of the answer on conn, whose first read
// writes the request if Out held it.
func (t *Trip) answerReader(hc *fasthttp.HostClient, conn net.Conn) *bufio.Reader {
	t.answer = t.Out.answer(conn)
	return hc.AcquireReader(&t.answer)
}

// answerError is the error of a failed read of an answer's head: that of
// the write of a held request (what send reports of a write), else the
// read's.
func (t *Trip) answerError(err error) error {
	switch werr := t.answer.WriteErr; {
	case werr == nil:
		return headError(err)
	case IsTimeout(werr):
		return ErrBodyTimeout
	default:
		return &writeError{Err: werr}
	}
}

// setBodyDeadline moves the read deadline from the head's to the body's,
// unless they are the same (the common case), which saves a clock read
// and a timer update.
func setBodyDeadline(conn net.Conn, d Deadlines) error {
	if d.Idle == 0 && d.Body.Equal(d.Head) {
		return nil
	}
	return conn.SetReadDeadline(d.bodyRead(time.Now()))
}

// bodyRead is the read deadline for the next piece of a body read at now.
func (d Deadlines) bodyRead(now time.Time) time.Time {
	if d.Idle > 0 {
		if i := now.Add(d.Idle); i.Before(d.Body) {
			return i
		}
	}
	return d.Body
}

// done returns a connection to the pool, or closes it.
func done(hc *fasthttp.HostClient, up pooledConn, br *bufio.Reader, keepAlive bool) {
	hc.ReleaseReader(br)
	if keepAlive {
		conns.release(hc, up)
	} else {
		conns.close(hc, up)
	}
}

// Read implements io.Reader for fasthttp's write of a streamed answer.
// With an idle bound, every read pushes the connection's deadline forward.
func (t *Trip) Read(p []byte) (int, error) {
	if t.readErr != nil {
		return 0, t.readErr
	}
	if t.deadline.Idle > 0 {
		if err := t.conn.SetReadDeadline(t.deadline.bodyRead(time.Now())); err != nil {
			t.readErr = err
			return 0, err
		}
	}
	n, err := t.body.Read(p)
	if err != nil && IsTimeout(err) {
		err = ErrBodyTimeout
	}
	return n, err
}

// CloseWithError is called by fasthttp once the streamed answer is
// written, or failed (err != nil): the upstream's connection goes back to
// the pool only if the body was read to its end; then the trip is Done.
func (t *Trip) CloseWithError(err error) error {
	t.release(t.hc, t.up, t.br, t.keep && err == nil && t.readErr == nil && t.body.reusable())
	status := t.status
	t.hc, t.up, t.conn, t.br, t.readErr, t.answer = nil, nil, nil, nil, nil, answerConn{}
	t.body.reset(nil, 0)
	t.policy.Done(status) // last: the policy may recycle the state t lives in
	return nil
}

// Settle applies the rule for a client's body after the trip failed and
// before the proxy answers itself: a body read in part closes the client's
// connection after the answer (its rest must never be parsed as a
// request); one never read is skipped if it is short (DiscardBody). It
// resets the response; the proxy then sets its answer on it without
// resetting it again (RequestCtx.Error would drop the close).
func (t *Trip) Settle(ctx *fasthttp.RequestCtx) {
	ctx.Response.Reset()
	if t.closeAfter || t.Out.Wrote() && t.Out.clientBodyUnread() {
		ctx.SetConnectionClose()
		return
	}
	DiscardBody(ctx)
}

func headError(err error) error {
	if IsTimeout(err) {
		return ErrHeadTimeout
	}
	return err
}

func bodyError(err error) error {
	if err != nil && IsTimeout(err) {
		return ErrBodyTimeout
	}
	return err
}
