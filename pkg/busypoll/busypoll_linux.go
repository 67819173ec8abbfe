package busypoll

import (
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// pollConn is a TCP connection whose reads poll before they park.
type pollConn struct {
	*net.TCPConn
	raw syscall.RawConn
	b   *Poller
}

// Wrap makes c poll if it is a TCP connection; others are left as they are.
func (b *Poller) Wrap(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	return &pollConn{TCPConn: tc, raw: raw, b: b}
}

// Read polls the socket for up to the budget, then reads as usual (so
// deadlines, EOF and errors keep the net package's semantics except for
// what the poll itself saw).
func (c *pollConn) Read(p []byte) (int, error) {
	if len(p) == 0 || !c.b.enter() {
		return c.TCPConn.Read(p)
	}
	n, err, done := c.poll(p)
	c.b.leave()
	if done {
		return n, err
	}
	return c.TCPConn.Read(p)
}

// poll reads without blocking until data, end of file, an error or the
// end of the budget (done false: nothing seen). It runs under the
// connection's read lock (RawConn.Read), as a plain Read would, and not
// at all when the read deadline has passed.
func (c *pollConn) poll(p []byte) (n int, err error, done bool) {
	c.b.spins.Add(1)
	end := time.Now().Add(c.b.budget)
	_ = c.raw.Read(func(fd uintptr) bool {
		for {
			m, e := syscall.Read(int(fd), p)
			switch {
			case m > 0:
				n, done = m, true
				c.b.hits.Add(1)
			case e == nil: // m == 0: the peer closed
				err, done = io.EOF, true
			case e == syscall.EINTR:
				continue
			case e == syscall.EAGAIN:
				if time.Now().Before(end) {
					continue
				}
			default:
				err, done = &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("read", e)}, true
			}
			return true // never wait here: a plain Read parks
		}
	})
	return n, err, done
}
