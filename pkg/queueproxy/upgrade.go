package queueproxy

import (
	"net"
	"time"

	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/pkg/proxycore"
)

// maxUpgradeRefusalBody bounds the body of an app's non-101 answer to an
// upgrade request (read whole, then the connection is closed).
const maxUpgradeRefusalBody = 1 << 20

// upgrade implements upstream for Connection: Upgrade requests (websockets).
// The request goes out on a connection that never returns to the pool; on
// 101 the client connection is hijacked and both are spliced until either
// side closes. The exchange stays in flight (and holds its breaker slot)
// for the life of the tunnel, as in Knative.
func (u *hostUpstream[C]) upgrade(x *exchange, ctx *fasthttp.RequestCtx) (bool, error) {
	cc, conn, err := u.send(x, &ctx.Request, true)
	if err != nil {
		return false, err
	}
	br := u.hc.AcquireReader(conn)
	resp := &ctx.Response
	if err := proxycore.ReadHead(resp, br, false, true); err != nil {
		u.done(cc, br, false)
		return false, headerError(err)
	}
	if resp.StatusCode() != fasthttp.StatusSwitchingProtocols {
		if err := conn.SetReadDeadline(x.bodyDeadline(u.now())); err != nil {
			u.done(cc, br, false)
			return false, err
		}
		resp.Header.ResetConnectionClose()
		err := resp.ReadBody(br, maxUpgradeRefusalBody)
		u.done(cc, br, false)
		return false, bodyError(err)
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		u.done(cc, br, false)
		return false, err
	}
	// The head is written by the hijack handler itself: fasthttp always
	// calls it once the handler returns, even if the client is gone, so the
	// exchange is always finished.
	head := append([]byte(nil), resp.Header.Header()...)
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(client net.Conn) {
		if _, err := client.Write(head); err == nil {
			proxycore.Splice(client, conn, br)
		}
		u.done(cc, br, false)
		x.finish(u.now(), fasthttp.StatusSwitchingProtocols)
	})
	return true, nil
}
