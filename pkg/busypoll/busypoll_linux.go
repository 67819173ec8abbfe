package busypoll

import (
	"io"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
)

// pollConn is a TCP connection whose reads poll before they park.
//
// A connection whose poll came up empty (its peer was slower than the
// budget: a client between sparse requests, a slow app) skips polling
// for its next 1, 2, 4 ... 64 reads, and is back to polling at every read
// after a poll that got data: polling goes where it pays.
type pollConn struct {
	*net.TCPConn
	raw syscall.RawConn
	b   *Poller

	skip, backoff atomic.Int32 // reads left without polling; the current back-off
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
	if len(p) == 0 {
		return c.TCPConn.Read(p)
	}
	if s := c.skip.Load(); s > 0 {
		c.skip.Store(s - 1)
		return c.TCPConn.Read(p)
	}
	if !c.b.enter() {
		return c.TCPConn.Read(p)
	}
	n, err, done := c.poll(p)
	c.b.leave()
	if done {
		c.backoff.Store(0)
		return n, err
	}
	b := min(max(2*c.backoff.Load(), 1), maxBackoff)
	c.backoff.Store(b)
	c.skip.Store(b)
	return c.TCPConn.Read(p)
}

// maxBackoff is the most reads a connection skips polling after a poll
// that came up empty.
const maxBackoff = 64

// busyIteration: a round of a poll (a read and a yield) that took longer
// found the CPUs busy; quietReads reads then skip polling. An idle
// machine's round is a microsecond or two.
const (
	busyIteration = 20 * time.Microsecond
	quietReads    = 256
)

// poll reads without blocking until data, end of file, an error or the
// end of the budget (done false: nothing seen). It runs under the
// connection's read lock (RawConn.Read), as a plain Read would, and not
// at all when the read deadline has passed.
func (c *pollConn) poll(p []byte) (n int, err error, done bool) {
	c.b.spins.Add(1)
	start := time.Now() // its monotonic reading; time.Since reads only that clock
	_ = c.raw.Read(func(fd uintptr) bool {
		for last := time.Duration(0); ; {
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
				now := time.Since(start)
				switch {
				case now-last > c.b.busyRound:
					c.b.quiet.Store(quietReads) // the CPUs are busy: polling only costs
				case now < c.b.budget:
					// Any goroutine that can run goes first: the poll
					// only uses CPU nobody else wants.
					runtime.Gosched()
					last = now
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
