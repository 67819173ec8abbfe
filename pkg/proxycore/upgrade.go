package proxycore

import (
	"errors"
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// MaxUpgradeRefusalBody bounds the body of an answer other than 101 to
// an upgrade request: it is read whole, then the connection is closed.
const MaxUpgradeRefusalBody = 1 << 20

// ErrTunnelRefused: the upstream switched protocols, but the proxy's
// TunnelHooks.Open refused the tunnel (a drain that has ended); the
// upstream's connection was closed and the client is still to be
// answered.
var ErrTunnelRefused = errors.New("the tunnel was refused: the proxy is shutting down")

// Deadlines bound the phases of an exchange with an upstream in which
// the upstream is the one to act: writing the request to it, the head of
// its answer, and the body.
type Deadlines struct {
	Write, Head, Body time.Time
}

// TunnelHooks are what a proxy does around an upgrade tunnel.
type TunnelHooks struct {
	// Open is called once the upstream answered 101, before the client's
	// connection is taken over; false refuses the tunnel. nil: accept.
	Open func(upstream net.Conn) bool
	// Closed is called when the tunnel has ended, both connections
	// closed: the request is over. Required.
	Closed func(upstream net.Conn)
}

// Upgrade forwards an upgrade request (Connection: Upgrade; a websocket)
// to an upstream of hc, on a connection of its own that never returns to
// the pool, written by Write like any request (so it has the same head:
// hop-by-hop headers, markers and all). Only a 101 Switching Protocols
// opens a tunnel: the client's connection is taken over (the 101 head
// written to it), both are spliced until either side ends, then
// h.Closed is called; hijacked is true. Any other answer is an ordinary
// response, left in ctx.Response with its body (up to
// MaxUpgradeRefusalBody) and without the upgrade's hop-by-hop headers:
// the client's connection goes on as HTTP/1.1, so the requests that
// follow on it are parsed, routed and counted as requests, never passed
// through raw.
//
// An error means no tunnel and no response: the caller answers, as for
// a failed attempt (the retry rule applies: MaySendAgain).
func (o *Outbound) Upgrade(ctx *fasthttp.RequestCtx, hc *fasthttp.HostClient, d Deadlines, h TunnelHooks) (hijacked bool, err error) {
	cc, err := hc.AcquireConn(time.Until(d.Head), true) // connectionClose: never pooled
	if err != nil {
		return false, err
	}
	conn := cc.Conn()
	if err := setDeadlines(conn, d.Write, d.Head); err != nil {
		hc.CloseConn(cc)
		return false, err
	}
	req := &ctx.Request
	req.UseHostHeader = true
	req.URI().DisablePathNormalizing = true
	if err := o.Write(hc, conn, req); err != nil {
		hc.CloseConn(cc)
		return false, err
	}
	br := hc.AcquireReader(conn)
	resp := &ctx.Response
	closeUp := func() {
		hc.ReleaseReader(br)
		hc.CloseConn(cc)
	}
	if err := ReadHead(resp, br, false, true); err != nil {
		closeUp()
		return false, err
	}
	if resp.StatusCode() != fasthttp.StatusSwitchingProtocols {
		defer closeUp()
		StripResponseHopHeaders(&resp.Header)
		if err := conn.SetReadDeadline(d.Body); err != nil {
			return false, err
		}
		return false, resp.ReadBody(br, MaxUpgradeRefusalBody)
	}
	if err := conn.SetDeadline(time.Time{}); err != nil { // a tunnel lives as long as both sides want
		closeUp()
		return false, err
	}
	if h.Open != nil && !h.Open(conn) {
		closeUp()
		return false, ErrTunnelRefused
	}
	// The 101 head is written by the hijack handler itself (fasthttp
	// would add a Content-Length to it). fasthttp calls the handler once
	// the request handler returns, even if the client is gone, so Closed
	// is always called.
	head := append([]byte(nil), resp.Header.Header()...)
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(client net.Conn) {
		if _, err := client.Write(head); err == nil {
			Splice(client, conn, br)
		}
		closeUp()
		h.Closed(conn)
	})
	return true, nil
}

// setDeadlines sets a connection's write and read deadlines.
func setDeadlines(conn net.Conn, write, read time.Time) error {
	if err := conn.SetWriteDeadline(write); err != nil {
		return err
	}
	return conn.SetReadDeadline(read)
}
