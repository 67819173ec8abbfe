package activator

import (
	"errors"
	"net"

	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/pkg/proxycore"
)

// forwardUpgrade passes a Connection: Upgrade request (websockets) to x's
// replica through proxycore's Upgrade (the same request writer as every
// request: marker, X-Forwarded-For, hop-by-hop headers). Only a 101 opens
// a tunnel: the client's connection is spliced to the replica's until
// either side closes, the slot held for the life of the tunnel; a
// graceful shutdown waits for the tunnel up to the drain timeout
// (tunnels). Any other answer is an ordinary response, and the client's
// connection stays HTTP/1.1: the requests after it are routed, counted
// and throttled as any. An error means no tunnel and no answer yet.
func (a *Activator) forwardUpgrade(ctx *fasthttp.RequestCtx, x *exchange) error {
	d := proxycore.Deadlines{Write: x.deadline, Head: x.deadline, Body: x.deadline}
	hijacked, err := x.out.Upgrade(ctx, x.r.client, d, proxycore.TunnelHooks{
		Open: func(replica net.Conn) bool {
			if !a.tunnels.add(replica) { // the drain timed out while it was opening
				return false
			}
			a.metrics.results[resultUpgraded].Inc()
			x.rev.m.results[resultUpgraded].Inc()
			return true
		},
		Closed: func(replica net.Conn) {
			x.finish()
			a.tunnels.done(replica) // after finish: a drain that saw the last one done finds nothing open
		},
	})
	switch {
	case errors.Is(err, proxycore.ErrTunnelRefused):
		a.reject(ctx, x, ErrShuttingDown)
	case err != nil:
		return err
	case !hijacked:
		a.respond(ctx, x) // the replica refused the upgrade: an ordinary answer
	}
	return nil
}
