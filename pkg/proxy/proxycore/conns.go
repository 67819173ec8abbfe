package proxycore

import (
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// The hop uses fasthttp's HostClient for what it is good at (the
// connection pool, the dialer, idle cleanup, buffer pools) but runs the
// exchange itself, because HostClient.Do can neither stream a large body
// without allocating a stream wrapper and closures per request, nor give
// each phase its own deadline. The pool's connection type is unexported;
// conns binds its three methods once, by inference, and hands the
// connections out behind an interface (a pointer in an interface: no
// allocation).

// pooledConn is a connection of a HostClient's pool.
type pooledConn = interface{ Conn() net.Conn }

// connPool is a HostClient's pool, whatever its connection type.
type connPool interface {
	acquire(hc *fasthttp.HostClient, timeout time.Duration, connectionClose bool) (pooledConn, error)
	release(hc *fasthttp.HostClient, c pooledConn) // back to the idle pool
	close(hc *fasthttp.HostClient, c pooledConn)
}

type poolFuncs[C pooledConn] struct {
	acq      func(*fasthttp.HostClient, time.Duration, bool) (C, error)
	rel, cls func(*fasthttp.HostClient, C)
}

func (f poolFuncs[C]) acquire(hc *fasthttp.HostClient, timeout time.Duration, connectionClose bool) (pooledConn, error) {
	c, err := f.acq(hc, timeout, connectionClose)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (f poolFuncs[C]) release(hc *fasthttp.HostClient, c pooledConn) { f.rel(hc, c.(C)) }
func (f poolFuncs[C]) close(hc *fasthttp.HostClient, c pooledConn)   { f.cls(hc, c.(C)) }

func bindPool[C pooledConn](acq func(*fasthttp.HostClient, time.Duration, bool) (C, error),
	rel, cls func(*fasthttp.HostClient, C)) connPool {
	return poolFuncs[C]{acq: acq, rel: rel, cls: cls}
}

// conns is every HostClient's pool.
var conns = bindPool((*fasthttp.HostClient).AcquireConn, (*fasthttp.HostClient).ReleaseConn, (*fasthttp.HostClient).CloseConn)
