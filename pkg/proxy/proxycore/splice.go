package proxycore

import (
	"io"
	"net"
	"sync"
)

// splice copies both ways between a client's hijacked connection and an
// upstream's until either side ends, then closes both. upstreamIn reads
// the upstream (a bufio.Reader that may hold bytes read past a 101 head,
// or the connection itself).
//
// The activator's tunnel and the queue-proxy's splice differed here: a
// hijacked fasthttp connection's Close does nothing (fasthttp closes it
// once the hijack handler returns), so a copy blocked reading the client
// would wait for the client after the upstream ended. The connection
// underneath is closed instead (the activator's way, which is right).
func splice(client net.Conn, upstream net.Conn, upstreamIn io.Reader) {
	raw := client
	if h, ok := client.(interface{ UnsafeConn() net.Conn }); ok {
		raw = h.UnsafeConn()
	}
	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			_ = raw.Close()
			_ = upstream.Close()
		})
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = io.Copy(upstream, client)
		closeBoth()
	})
	_, _ = io.Copy(client, upstreamIn)
	closeBoth()
	wg.Wait()
}
