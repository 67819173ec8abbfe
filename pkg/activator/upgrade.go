package activator

import (
	"bufio"
	"fmt"
	"net"
	"time"

	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/pkg/proxycore"
)

// upgradeDialTimeout bounds the connection to the replica for an upgrade.
const upgradeDialTimeout = 5 * time.Second

// forwardUpgrade passes a Connection: Upgrade request (websockets) through:
// it connects to the replica and sends the request; then it takes over the
// client's connection and copies bytes both ways, the replica's answer
// (101 or not) included, until either side closes. The slot is held for
// the life of the tunnel; a graceful shutdown waits for the tunnel up to
// the drain timeout (tunnels). An error means the tunnel did not open and the
// request is not answered yet.
func (a *Activator) forwardUpgrade(ctx *fasthttp.RequestCtx, x *exchange) error {
	conn, err := a.dialReplica(x.r.addr)
	if err == nil {
		err = writeRequest(conn, &ctx.Request)
		if err != nil {
			conn.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("opening the upgrade tunnel: %w", err)
	}
	if !a.tunnels.add(conn) { // the drain timed out while it was opening
		conn.Close()
		a.reject(ctx, x, ErrShuttingDown)
		return nil
	}
	a.metrics.results[resultUpgraded].Inc()
	x.rev.m.results[resultUpgraded].Inc()
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(client net.Conn) {
		proxycore.Splice(client, conn, conn)
		x.finish()
		a.tunnels.done(conn) // after finish: a drain that saw the last one done finds nothing open
	})
	return nil
}

func (a *Activator) dialReplica(addr string) (net.Conn, error) {
	if a.opts.Dial != nil {
		return a.opts.Dial(addr)
	}
	return fasthttp.DialTimeout(addr, upgradeDialTimeout)
}

func writeRequest(conn net.Conn, req *fasthttp.Request) error {
	if err := conn.SetWriteDeadline(time.Now().Add(upgradeDialTimeout)); err != nil {
		return err
	}
	bw := bufio.NewWriter(conn)
	if err := req.Write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return conn.SetWriteDeadline(time.Time{})
}
