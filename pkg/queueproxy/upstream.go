package queueproxy

import (
	"bufio"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/pkg/proxycore"
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

// roundTrip implements upstream. A request that failed before any
// response byte is sent once more on another connection when the retry
// rule allows (proxycore.Outbound.MaySendAgain: nothing of it was written,
// or it is idempotent with its body in memory; the app may have closed an
// idle keep-alive connection just as it was reused). Bodies from the
// client stream, so in practice only bodiless idempotent requests qualify.
func (u *hostUpstream[C]) roundTrip(x *exchange, req *fasthttp.Request, resp *fasthttp.Response) (bool, error) {
	resent := false
	for stale := 0; ; {
		streamed, err := u.try(x, req, resp)
		switch {
		case errors.Is(err, proxycore.ErrStaleConn) && stale < maxStaleConns:
			stale++ // closed by the app while idle; nothing was written
			continue
		case err == nil || resent || errors.Is(err, errHeaderTimeout) || !x.out.MaySendAgain(err):
			return streamed, err
		}
		resent = true
		resp.Reset()
	}
}

// maxStaleConns bounds the pooled connections found closed (and dropped)
// before one request is written.
const maxStaleConns = 8

// try is one attempt.
func (u *hostUpstream[C]) try(x *exchange, req *fasthttp.Request, resp *fasthttp.Response) (streamed bool, err error) {
	cc, conn, err := u.send(x, req, false)
	if err != nil {
		return false, err
	}
	br := u.hc.AcquireReader(conn)
	if err := proxycore.ReadHead(resp, br, req.Header.IsHead(), false); err != nil {
		u.hc.ReleaseReader(br)
		u.discard(cc)
		return false, headerError(err)
	}
	keepAlive := proxycore.StripResponseHopHeaders(&resp.Header)
	cl := resp.Header.ContentLength()
	switch proxycore.KindOf(req, resp, maxBufferedBody) {
	case proxycore.NoBody:
		u.done(cc, br, keepAlive)
		return false, nil
	case proxycore.Buffered:
		if err := u.setBodyDeadline(x, conn); err != nil {
			u.done(cc, br, false)
			return false, err
		}
		err := resp.ReadBody(br, 0)
		u.done(cc, br, keepAlive && err == nil)
		return false, bodyError(err)
	}
	if err := u.setBodyDeadline(x, conn); err != nil {
		u.done(cc, br, false)
		return false, err
	}
	s := u.streams.Get().(*bodyStream[C])
	s.start(u, x, cc, conn, br, resp.StatusCode(), cl, keepAlive)
	// A chunked body's trailers: fasthttp writes them after the body.
	s.body.ForwardTrailers(&resp.Header)
	resp.SetBodyStream(s, max(cl, -1)) // -1: chunked to the client
	resp.ImmediateHeaderFlush = true   // long responses: the client sees the head at once
	return true, nil
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
		if proxycore.IsTimeout(err) {
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
	req.UseHostHeader = true
	req.URI().DisablePathNormalizing = true
	if err := x.out.Write(u.hc, conn, req); err != nil {
		u.discard(cc)
		if proxycore.IsTimeout(err) {
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

func headerError(err error) error {
	if proxycore.IsTimeout(err) {
		return errHeaderTimeout
	}
	return err
}

func bodyError(err error) error {
	if err != nil && proxycore.IsTimeout(err) {
		return errBodyTimeout
	}
	return err
}
