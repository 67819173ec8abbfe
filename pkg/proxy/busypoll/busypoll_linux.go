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

	turn   turnState // the turn in progress: one at a time, under the read lock
	rd, wr rawIO     // the read and the write in progress (rawio_linux.go)
}

// wrap makes c poll if it is a TCP connection; others are left as they are.
func (b *Poller) wrap(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	pc := &pollConn{TCPConn: tc, raw: raw, b: b}
	pc.turn.bind(tc, raw, pc)
	pc.rd.step, pc.wr.step = pc.readStep, pc.writeStep
	return pc
}

// SyscallConn is the socket's RawConn, kept since Wrap: the embedded
// TCPConn's would allocate one per call, and the proxies look at a pooled
// connection before every request (proxycore's peek).
func (c *pollConn) SyscallConn() (syscall.RawConn, error) { return c.raw, nil }

// Read polls the socket for up to the budget, then reads as usual (so
// deadlines, EOF and errors keep the net package's semantics except for
// what the poll itself saw), with raw system calls (rawio_linux.go).
func (c *pollConn) Read(p []byte) (int, error) {
	if len(p) == 0 || !c.startPoll() {
		return c.readRaw(p)
	}
	var n int
	var err error
	var done bool
	_ = c.raw.Read(func(fd uintptr) bool { // not at all when the read deadline has passed
		n, err, done = c.pollLoop(fd, p)
		return true // never wait here: a plain Read parks
	})
	if c.endPoll(done) {
		return n, err
	}
	return c.readRaw(p)
}

// Turn implements Turner: after the write, the read polls as Read does
// before it parks.
func (c *pollConn) Turn(w, r []byte) (int, error, error) { return c.turn.run(w, r) }

// startPoll reports whether this read polls (the connection's back-off
// and the Poller's gate); endPoll must follow a true.
func (c *pollConn) startPoll() bool {
	if s := c.skip.Load(); s > 0 {
		c.skip.Store(s - 1)
		return false
	}
	return c.b.enter()
}

// endPoll ends a poll that got its data (done) or not, which sets the
// back-off, and reports done.
func (c *pollConn) endPoll(done bool) bool {
	c.b.leave()
	if done {
		c.backoff.Store(0)
		return true
	}
	b := min(max(2*c.backoff.Load(), 1), maxBackoff)
	c.backoff.Store(b)
	c.skip.Store(b)
	return false
}

// maxBackoff is the most reads a connection skips polling after a poll
// that came up empty.
const maxBackoff = 64

// pollLoop reads fd without blocking until data, end of file, an error
// or the end of the budget (done false: nothing seen). It runs within a
// read of the connection (RawConn.Read: under its read lock, as a plain
// Read would).
func (c *pollConn) pollLoop(fd uintptr, p []byte) (n int, err error, done bool) {
	c.b.spins.Add(1)
	start := time.Now() // its monotonic reading; time.Since reads only that clock
	for last := time.Duration(0); ; {
		m, e := rawRead(fd, p)
		switch {
		case m > 0:
			c.b.hits.Add(1)
			return m, nil, true
		case e == 0: // m == 0: the peer closed
			return 0, io.EOF, true
		case e == syscall.EINTR:
			continue
		case e != syscall.EAGAIN:
			return 0, readError(c.TCPConn, e), true
		}
		now := time.Since(start)
		switch {
		case now-last > c.b.busyRound:
			c.b.quiet.Store(quietReads) // the CPUs are busy: polling only costs
		case now < c.b.budget:
			// Any goroutine that can run goes first: the poll only uses
			// CPU nobody else wants.
			runtime.Gosched()
			last = now
			continue
		}
		return 0, nil, false
	}
}

func readError(c *net.TCPConn, e error) error {
	return &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("read", e)}
}

// turnTCP is Turn on a TCP connection that is not a polling one (its
// state is built for the turn: a polling connection keeps its own).
func turnTCP(c *net.TCPConn, w, r []byte) (int, error, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return plainTurn(c, w, r)
	}
	var t turnState
	t.bind(c, raw, nil)
	return t.run(w, r)
}

// turnState is a turn on a TCP connection (see Turner). The write runs
// within the read, after the poller's reset of the socket's readiness:
// the answer's arrival then wakes the parked read, which never tries a
// read before. With pc, the read polls after the write as pc's reads
// do. step is bound once, so a turn allocates nothing.
type turnState struct {
	c    *net.TCPConn
	raw  syscall.RawConn
	pc   *pollConn
	step func(fd uintptr) bool

	w, r       []byte
	wrote      bool
	n          int
	werr, rerr error
}

func (t *turnState) bind(c *net.TCPConn, raw syscall.RawConn, pc *pollConn) {
	t.c, t.raw, t.pc = c, raw, pc
	t.step = t.stepFD
}

// write is the turn's write: a polling connection's own (raw system
// calls), else the net package's.
func (t *turnState) write(p []byte) (int, error) {
	if t.pc != nil {
		return t.pc.Write(p)
	}
	return t.c.Write(p)
}

func (t *turnState) run(w, r []byte) (n int, writeErr, readErr error) {
	t.w, t.r, t.wrote, t.n, t.werr, t.rerr = w, r, false, 0, nil, nil
	err := t.raw.Read(t.step)
	n, writeErr, readErr = t.n, t.werr, t.rerr
	wrote := t.wrote
	t.w, t.r, t.werr, t.rerr = nil, nil, nil, nil
	if err != nil && writeErr == nil && readErr == nil {
		if !wrote {
			return 0, nil, notWrittenError{err} // the read deadline had passed: nothing was written
		}
		readErr = err // the read deadline, or the connection closed
	}
	return n, writeErr, readErr
}

// stepFD is the turn's RawConn.Read callback: the write (and a poll)
// first, then a read each time the socket signals.
func (t *turnState) stepFD(fd uintptr) bool {
	if !t.wrote {
		t.wrote = true
		if _, t.werr = t.write(t.w); t.werr != nil {
			return true
		}
		if pc := t.pc; pc != nil && pc.startPoll() {
			m, e, done := pc.pollLoop(fd, t.r)
			if pc.endPoll(done) {
				t.n, t.rerr = m, e
				return true
			}
		}
		return false // park until the answer signals
	}
	for {
		m, e := rawRead(fd, t.r)
		switch {
		case m > 0:
			t.n = m
		case e == 0:
			t.rerr = io.EOF
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			return false // a wake-up without data: wait again
		default:
			t.rerr = readError(t.c, e)
		}
		return true
	}
}
