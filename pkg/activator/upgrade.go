package activator

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
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
		tunnel(client, conn)
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

// tunnel copies both ways until one side ends, then closes both. The
// client's connection is fasthttp's hijacked one, whose Close does nothing
// (fasthttp closes it once the hijack handler returns), so a copy blocked
// reading from it would wait for the client: the connection underneath is
// closed instead.
func tunnel(client, replica net.Conn) {
	raw := client
	if h, ok := client.(interface{ UnsafeConn() net.Conn }); ok {
		raw = h.UnsafeConn()
	}
	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			raw.Close()
			replica.Close()
		})
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		io.Copy(replica, client) // ends the tunnel either way
		closeBoth()
	})
	io.Copy(client, replica)
	closeBoth()
	wg.Wait()
}
