// Package connlimit bounds the connections a listener hands out: in all
// (Accept waits for a slot, and the kernel's backlog holds the rest, as
// golang.org/x/net/netutil.LimitListener) and per client IP (a connection
// over its address's cap gets a short answer and is closed at once). The
// binaries use it on their admin ports, which serve a few probes and
// scrapers: one greedy client must not take their place.
//
// fasthttp has Server.MaxConnsPerIP, but its wrapper clears its embedded
// connection on Close while a reader may still use it (a data race, and a
// nil dereference, on Shutdown with idle keep-alive connections), counts
// IPv4 only, and hides the socket's syscall.Conn; this package does none
// of that. It must not import other Ebb packages.
package connlimit

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// Options bound a listener. Zero values mean "no limit".
type Options struct {
	// Max is the number of connections open at once; Accept waits while
	// that many are open.
	Max int
	// PerIP is the number of connections open at once from one client
	// address (IPv4 and IPv6 alike).
	PerIP int
	// Refuse is written to a connection over its address's cap before it
	// is closed (e.g. an HTTP 429); nil writes nothing.
	Refuse []byte
}

// refuseTimeout bounds the write of Options.Refuse.
const refuseTimeout = time.Second

// Listen wraps l with the bounds of o.
func Listen(l net.Listener, o Options) net.Listener {
	ll := &listener{Listener: l, o: o, done: make(chan struct{}), perIP: map[netip.Addr]int{}}
	if o.Max > 0 {
		ll.slots = make(chan struct{}, o.Max)
	}
	return ll
}

type listener struct {
	net.Listener
	o     Options
	slots chan struct{} // one token per open connection; nil: no total cap
	done  chan struct{} // closed by Close: a waiting Accept gives up
	once  sync.Once

	mu    sync.Mutex         // guards perIP
	perIP map[netip.Addr]int // open connections per client address
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		if l.slots != nil {
			select {
			case l.slots <- struct{}{}:
			case <-l.done:
				return nil, net.ErrClosed
			}
		}
		c, err := l.Listener.Accept()
		if err != nil {
			l.releaseSlot()
			return nil, err
		}
		ip, ok := l.admit(c)
		if ok {
			return &conn{Conn: c, l: l, ip: ip}, nil
		}
		l.refuse(c)
		l.releaseSlot()
	}
}

// admit counts c against its address; it reports false when the address
// is at its cap.
func (l *listener) admit(c net.Conn) (netip.Addr, bool) {
	if l.o.PerIP <= 0 {
		return netip.Addr{}, true
	}
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return netip.Addr{}, true // not an IP connection: no per-IP cap
	}
	ip := ap.Addr().Unmap()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.perIP[ip] >= l.o.PerIP {
		return ip, false
	}
	l.perIP[ip]++
	return ip, true
}

func (l *listener) refuse(c net.Conn) {
	if len(l.o.Refuse) > 0 {
		c.SetWriteDeadline(time.Now().Add(refuseTimeout)) // best effort
		c.Write(l.o.Refuse)                               // best effort
	}
	c.Close()
}

func (l *listener) releaseSlot() {
	if l.slots != nil {
		<-l.slots
	}
}

func (l *listener) release(ip netip.Addr) {
	if l.o.PerIP > 0 && ip.IsValid() {
		l.mu.Lock()
		if l.perIP[ip]--; l.perIP[ip] <= 0 {
			delete(l.perIP, ip)
		}
		l.mu.Unlock()
	}
	l.releaseSlot()
}

func (l *listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// conn gives its place back once, on the first Close. Its embedded
// connection never changes, so reads racing a Close are safe.
type conn struct {
	net.Conn
	l    *listener
	ip   netip.Addr
	once sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.ip) })
	return err
}
