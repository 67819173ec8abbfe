package proxycore

import (
	"errors"
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// maxUpgradeRefusalBody bounds the body of an answer other than 101 to
// an upgrade request: it is read whole, then the connection is closed.
const maxUpgradeRefusalBody = 1 << 20

// ErrTunnelRefused: the upstream switched protocols, but the policy
// refused the tunnel (OpenTunnel: a drain that has ended); the upstream's
// connection was closed and the client is still to be answered.
var ErrTunnelRefused = errors.New("the tunnel was refused: the proxy is shutting down")

// upgrade forwards an upgrade request (Connection: Upgrade; a websocket)
// on a connection of its own that never returns to the pool, written as
// any request is. Only a 101 Switching Protocols opens a tunnel: the
// client's connection is taken over (the 101 head written to it), both
// are spliced until either side ends, then the policy is Done; pending is
// true. Any other answer is an ordinary response, left in ctx.Response
// with its body (up to MaxUpgradeRefusalBody) and without hop-by-hop
// fields: the client's connection goes on as HTTP/1.1, so the requests
// that follow on it are parsed, routed and counted as requests, never
// passed through raw.
func (t *Trip) upgrade(ctx *fasthttp.RequestCtx, hc *fasthttp.HostClient, d Deadlines) (pending bool, err error) {
	up, conn, err := t.send(hc, d, &ctx.Request, true)
	if err != nil {
		return false, err
	}
	br := t.answerReader(hc, conn)
	resp := &ctx.Response
	if err := readHead(resp, br, false, true); err != nil {
		done(hc, up, br, false)
		return false, t.answerError(err)
	}
	if t.NotSent.check(&resp.Header) {
		done(hc, up, br, false)
		return false, errNotSent
	}
	if resp.StatusCode() != fasthttp.StatusSwitchingProtocols {
		defer done(hc, up, br, false)
		_, t.scratch = prepareResponse(&resp.Header, t.scratch)
		if err := conn.SetReadDeadline(d.Body); err != nil {
			return false, err
		}
		return false, bodyError(resp.ReadBody(br, maxUpgradeRefusalBody))
	}
	if err := conn.SetDeadline(time.Time{}); err != nil { // a tunnel lives as long as both sides want
		done(hc, up, br, false)
		return false, err
	}
	if !t.policy.OpenTunnel(conn) {
		done(hc, up, br, false)
		return false, ErrTunnelRefused
	}
	// The 101 head is written by the hijack handler itself (fasthttp would
	// add a Content-Length to it). fasthttp calls the handler once the
	// request handler returns, even if the client is gone, so the policy
	// is always Done.
	head := append([]byte(nil), resp.Header.Header()...)
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(client net.Conn) {
		if _, err := client.Write(head); err == nil {
			splice(client, conn, br)
		}
		done(hc, up, br, false)
		t.policy.Done(fasthttp.StatusSwitchingProtocols)
	})
	return true, nil
}

// setDeadlines sets a connection's write and read deadlines (one timer
// when they are the same, the common case).
func setDeadlines(conn net.Conn, write, read time.Time) error {
	if write.Equal(read) {
		return conn.SetDeadline(write)
	}
	if err := conn.SetWriteDeadline(write); err != nil {
		return err
	}
	return conn.SetReadDeadline(read)
}
