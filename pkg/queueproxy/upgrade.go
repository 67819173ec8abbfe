package queueproxy

import (
	"net"

	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/pkg/proxycore"
)

// upgrade implements upstream for Connection: Upgrade requests
// (websockets) with proxycore's Upgrade: on 101 the client connection is
// spliced to the app's until either side closes, and the exchange stays
// in flight (and holds its breaker slot) for the life of the tunnel, as
// in Knative; any other answer is an ordinary response.
func (u *hostUpstream[C]) upgrade(x *exchange, ctx *fasthttp.RequestCtx) (bool, error) {
	d := proxycore.Deadlines{Write: x.requestDeadline, Head: x.headerDeadline, Body: x.bodyDeadline(u.now())}
	hijacked, err := x.out.Upgrade(ctx, u.hc, d, proxycore.TunnelHooks{
		Closed: func(net.Conn) { x.finish(u.now(), fasthttp.StatusSwitchingProtocols) },
	})
	if err != nil {
		return false, headerError(err)
	}
	return hijacked, nil
}
