package queueproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// maxBufferedBody is the largest response body (with a Content-Length) read
// whole before it is sent on; larger, chunked and close-delimited bodies
// stream through bodyStream.
const maxBufferedBody = 64 << 10

// clientConn is what fasthttp's HostClient hands out from its pool. Its type
// is unexported, so hostUpstream is generic over it and holds the pool's
// methods as values bound once at construction: this keeps HostClient's
// pool, dialer and idle-connection cleaner while owning each step of the
// exchange (per-phase deadlines, streaming, upgrades), which HostClient.Do
// does not expose.
type clientConn interface{ Conn() net.Conn }

// hostUpstream is the upstream implementation over a fasthttp.HostClient.
type hostUpstream[C clientConn] struct {
	hc      *fasthttp.HostClient
	acquire func(timeout time.Duration, connectionClose bool) (C, error)
	release func(C) // back to the idle pool
	discard func(C) // close

	idle    time.Duration // REVISION_IDLE_TIMEOUT_SECONDS; 0: none
	now     func() time.Time
	streams sync.Pool // *bodyStream[C]
}

// newHostUpstream binds the pool methods of hc (C is inferred as fasthttp's
// unexported connection type).
func newHostUpstream[C clientConn](hc *fasthttp.HostClient, acquire func(time.Duration, bool) (C, error),
	release, discard func(C), idle time.Duration, now func() time.Time) *hostUpstream[C] {
	u := &hostUpstream[C]{hc: hc, acquire: acquire, release: release, discard: discard, idle: idle, now: now}
	u.streams.New = func() any { return new(bodyStream[C]) }
	return u
}

// newAppClient is the HostClient the proxy uses for the app on addr.
func newAppClient(addr string, c Config) *fasthttp.HostClient {
	maxConns := 4096
	if c.ContainerConcurrency > 0 {
		maxConns = c.ContainerConcurrency + 16 // upgrades and closing connections
	}
	return &fasthttp.HostClient{
		Addr:               addr,
		MaxConns:           maxConns,
		MaxConnWaitTimeout: c.RequestTimeout,
		// Below the shortest common keep-alive timeouts of app servers
		// (Node.js 5 s), so a pooled connection is rarely one the app has
		// just closed; reconnecting on 127.0.0.1 costs microseconds.
		MaxIdleConnDuration:      4 * time.Second,
		ReadBufferSize:           8 << 10, // the longest response head accepted
		WriteBufferSize:          8 << 10,
		NoDefaultUserAgentHeader: true,
	}
}

// roundTrip implements upstream. An idempotent request without a body that
// failed on a pooled connection before any response byte is sent once more
// on another connection: the app may have closed an idle keep-alive
// connection just as it was reused (Go's http.Transport does the same).
func (u *hostUpstream[C]) roundTrip(x *exchange, req *fasthttp.Request, resp *fasthttp.Response) (bool, error) {
	streamed, retry, err := u.try(x, req, resp)
	if err != nil && retry && replayable(&req.Header) {
		resp.Reset()
		streamed, _, err = u.try(x, req, resp)
	}
	return streamed, err
}

// replayable: the request can be sent again safely. Only an empty body can
// be replayed (a body streams from the client once), and only idempotent
// methods (RFC 9110 §9.2.2).
func replayable(h *fasthttp.RequestHeader) bool {
	cl := h.ContentLength() // -2: no length and not chunked, which for a request is no body
	return (cl == 0 || cl == -2) &&
		(h.IsGet() || h.IsHead() || h.IsOptions() || h.IsPut() || h.IsDelete() || h.IsTrace())
}

// try is one attempt. retry says the failure came before any response byte.
func (u *hostUpstream[C]) try(x *exchange, req *fasthttp.Request, resp *fasthttp.Response) (streamed, retry bool, err error) {
	cc, conn, err := u.send(x, req, false)
	if err != nil {
		return false, !errors.Is(err, errHeaderTimeout), err
	}
	br := u.hc.AcquireReader(conn)
	if err := readHead(resp, br, req.Header.IsHead()); err != nil {
		u.hc.ReleaseReader(br)
		u.discard(cc)
		return false, isNothingRead(err), headerError(err)
	}
	keepAlive := !resp.Header.ConnectionClose()
	resp.Header.ResetConnectionClose() // the app's choice for its hop, not the client's
	resp.Header.Del("Keep-Alive")
	cl := resp.Header.ContentLength()
	switch {
	case !hasBody(req, resp):
		// after a 101 the connection speaks another protocol: never pool it
		u.done(cc, br, keepAlive && resp.StatusCode() != fasthttp.StatusSwitchingProtocols)
		return false, false, nil
	case cl >= 0 && cl <= maxBufferedBody:
		if err := u.setBodyDeadline(x, conn); err != nil {
			u.done(cc, br, false)
			return false, false, err
		}
		err := resp.ReadBody(br, 0)
		u.done(cc, br, keepAlive && err == nil)
		return false, false, bodyError(err)
	}
	if err := u.setBodyDeadline(x, conn); err != nil {
		u.done(cc, br, false)
		return false, false, err
	}
	s := u.streams.Get().(*bodyStream[C])
	s.start(u, x, cc, conn, br, resp.StatusCode(), cl, keepAlive)
	resp.SetBodyStream(s, max(cl, -1)) // -1: chunked to the client
	resp.ImmediateHeaderFlush = true   // long responses: the client sees the head at once
	return true, false, nil
}

// setBodyDeadline moves the read deadline from the head's to the body's,
// unless they are the same (the default: no idle timeout, no shorter
// response start timeout), which saves a clock read and a timer update.
func (u *hostUpstream[C]) setBodyDeadline(x *exchange, conn net.Conn) error {
	if u.idle == 0 && x.headerDeadline.Equal(x.requestDeadline) {
		return nil
	}
	return conn.SetReadDeadline(x.bodyDeadline(u.now()))
}

// send takes a connection and writes req on it.
func (u *hostUpstream[C]) send(x *exchange, req *fasthttp.Request, close bool) (C, net.Conn, error) {
	var zero C
	cc, err := u.acquire(x.p.headerBudget, close) // dial and pool-wait bound; no clock read
	if err != nil {
		if errors.Is(err, fasthttp.ErrTimeout) || isTimeout(err) {
			return zero, nil, errHeaderTimeout
		}
		return zero, nil, err
	}
	conn := cc.Conn()
	if err := conn.SetWriteDeadline(x.requestDeadline); err != nil {
		u.discard(cc)
		return zero, nil, err
	}
	if err := conn.SetReadDeadline(x.headerDeadline); err != nil {
		u.discard(cc)
		return zero, nil, err
	}
	bw := u.hc.AcquireWriter(conn)
	req.UseHostHeader = true
	req.URI().DisablePathNormalizing = true
	err = req.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	u.hc.ReleaseWriter(bw)
	if err != nil {
		u.discard(cc)
		if isTimeout(err) {
			return zero, nil, errBodyTimeout
		}
		return zero, nil, err
	}
	return cc, conn, nil
}

// done returns the connection to the pool, or closes it.
func (u *hostUpstream[C]) done(cc C, br *bufio.Reader, keepAlive bool) {
	u.hc.ReleaseReader(br)
	if keepAlive {
		u.release(cc)
	} else {
		u.discard(cc)
	}
}

// readHead reads the response head, skipping interim 1xx responses other
// than 101 Switching Protocols.
func readHead(resp *fasthttp.Response, br *bufio.Reader, head bool) error {
	resp.SkipBody = head
	for range 10 {
		if err := resp.Header.Read(br); err != nil {
			return err
		}
		sc := resp.StatusCode()
		if sc >= 200 || sc < 100 || sc == fasthttp.StatusSwitchingProtocols {
			return nil
		}
	}
	return errors.New("too many interim responses")
}

// hasBody: whether a body follows the head (RFC 9112 §6.3).
func hasBody(req *fasthttp.Request, resp *fasthttp.Response) bool {
	sc := resp.StatusCode()
	return !req.Header.IsHead() && sc >= 200 && sc != fasthttp.StatusNoContent && sc != fasthttp.StatusNotModified
}

// isTimeout: a deadline fired (net.Error, os.ErrDeadlineExceeded, or
// fasthttp's own timeout errors, which only have Timeout).
func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &te) && te.Timeout()
}

// isNothingRead: the connection ended before the first response byte.
func isNothingRead(err error) bool {
	var nr fasthttp.ErrNothingRead
	return errors.Is(err, io.EOF) || errors.As(err, &nr)
}

func headerError(err error) error {
	if isTimeout(err) {
		return errHeaderTimeout
	}
	return err
}

func bodyError(err error) error {
	if err != nil && isTimeout(err) {
		return errBodyTimeout
	}
	return err
}
