package queueproxy

import (
	"time"

	"github.com/valyala/fasthttp"
)

// maxBufferedBody is the largest response body (with a Content-Length)
// read whole before it is sent on, and the largest request body fasthttp
// reads before the handler; larger, chunked and close-delimited bodies
// stream.
const maxBufferedBody = 64 << 10

// newAppClient is the HostClient the proxy uses for the app on addr: its
// pool, dialer and buffers; the hop (proxycore.Trip) runs each exchange.
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
