package activator

import (
	"fmt"
	"net"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/valyala/fasthttp"
)

// clientCache keeps one HostClient per replica address, least recently
// used first out. An evicted client closes its idle connections at once;
// connections still carrying a request close when they go idle (the
// client's cleaner), so a revision churning through replicas holds at most
// size clients' idle connections.
type clientCache struct {
	mu          sync.Mutex // serialises get, so a client is built once per address
	lru         *lru.Cache[string, *fasthttp.HostClient]
	dial        fasthttp.DialFunc
	dialTimeout fasthttp.DialFuncWithTimeout // used when dial is nil (Activator.connectWithin)
}

func newClientCache(size int, dial fasthttp.DialFunc, dialTimeout fasthttp.DialFuncWithTimeout) (*clientCache, error) {
	c := &clientCache{dial: dial, dialTimeout: dialTimeout}
	var err error
	c.lru, err = lru.NewWithEvict(size, func(_ string, hc *fasthttp.HostClient) { hc.CloseIdleConnections() })
	if err != nil {
		return nil, fmt.Errorf("creating the client cache: %w", err)
	}
	return c, nil
}

// get returns the client for addr, creating it if needed.
func (c *clientCache) get(addr string) *fasthttp.HostClient {
	c.mu.Lock()
	defer c.mu.Unlock()
	if hc, ok := c.lru.Get(addr); ok {
		return hc
	}
	hc := newHostClient(addr, c.dial)
	if c.dial == nil {
		hc.DialTimeout = c.dialTimeout
	}
	c.lru.Add(addr, hc)
	return hc
}

// connectWithin is the dialer of the replicas' clients (nil base:
// fasthttp's TCP dialer): each connect is bounded by ConnectTimeout, or by
// the caller's time if shorter (a probe's, a request's remaining). Without
// it fasthttp's HostClient dials with the request's whole remaining time,
// and an unanswered SYN holds the request for the kernel's SYN retries
// (about 127 s on Linux). A connect that timed out sent nothing: retry
// sends the request elsewhere and counts it.
func (a *Activator) connectWithin(base fasthttp.DialFuncWithTimeout) fasthttp.DialFuncWithTimeout {
	if base == nil {
		base = fasthttp.DialTimeout
	}
	limit := a.opts.ConnectTimeout
	return func(addr string, timeout time.Duration) (net.Conn, error) {
		if timeout <= 0 || timeout > limit {
			timeout = limit
		}
		return base(addr, timeout)
	}
}

// len returns the number of cached clients.
func (c *clientCache) len() int { return c.lru.Len() }

// Client limits. The throttle bounds the requests per replica, so
// MaxConns only matters for unlimited capacity. The request path uses the
// client's pool, dialer and buffers but runs the exchange itself
// (proxycore.Trip); Do serves the probes.
const (
	clientMaxConns    = 4096
	clientIdleTimeout = 30 * time.Second
	maxResponseHead   = 16 << 10 // read buffer: the longest response head accepted
)

func newHostClient(addr string, dial fasthttp.DialFunc) *fasthttp.HostClient {
	return &fasthttp.HostClient{
		Addr:                     addr,
		Dial:                     dial,
		MaxConns:                 clientMaxConns,
		MaxConnWaitTimeout:       time.Minute, // the request's deadline bounds it first
		MaxIdleConnDuration:      clientIdleTimeout,
		ReadBufferSize:           maxResponseHead,
		NoDefaultUserAgentHeader: true,
		DisablePathNormalizing:   true,
	}
}
