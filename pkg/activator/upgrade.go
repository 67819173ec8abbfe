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
// the life of the tunnel. An error means the tunnel did not open and the
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
	a.metrics.results[resultUpgraded].Inc()
	x.rev.m.results[resultUpgraded].Inc()
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(client net.Conn) {
		tunnel(client, conn)
		x.finish()
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

// tunnel copies both ways until one side ends, then closes both.
func tunnel(client, replica net.Conn) {
	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			client.Close()
			replica.Close()
		})
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		io.Copy(replica, client) //nolint:errcheck // ends the tunnel either way
		closeBoth()
	})
	io.Copy(client, replica) //nolint:errcheck
	closeBoth()
	wg.Wait()
}
