package busypoll

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// The reads and writes of a polling connection are system calls the Go
// runtime is not told about (syscall.RawSyscall), on the socket the net
// package made non-blocking and waits on as usual (RawConn.Read and
// Write: the same locks, deadlines and netpoller as a plain Read or
// Write).
//
// A system call made the usual way (syscall.Read) hands its P, the
// right to run Go code, to the runtime for the call's duration, and the
// runtime's monitor thread (sysmon) takes back a P that has been in a
// call since its last look and hands it to another thread. A proxy
// under load is in a socket call most of the time, so the monitor finds
// one at nearly every look, and never backs off from looking every 20
// µs: about 7 % of a busy proxy's CPU on the development machines, plus
// the threads it wakes and the reacquiring of the P after the call. A
// read or write of a non-blocking socket never blocks (it copies what
// the socket holds or has room for, or fails with EAGAIN), so it needs
// none of that: with raw calls the monitor finds nothing to take back
// and sleeps up to 10 ms between looks. The price: the garbage
// collector's stop of the world waits for a call in progress to return,
// the time it takes to copy at most a socket buffer (microseconds).
//
// Under the race detector the calls are syscall.Read and Write
// (rawio_race.go), whose annotations tell it what the kernel read and
// wrote and order the goroutines on the two ends of any I/O; the raw
// calls themselves are tested either way (TestSysReadWrite).

// sysRead is read(2) of fd into p as a raw system call.
func sysRead(fd uintptr, p []byte) (int, syscall.Errno) { return sysIO(syscall.SYS_READ, fd, p) }

// sysWrite is write(2) of p to fd as a raw system call.
func sysWrite(fd uintptr, p []byte) (int, syscall.Errno) { return sysIO(syscall.SYS_WRITE, fd, p) }

func sysIO(trap, fd uintptr, p []byte) (int, syscall.Errno) {
	if len(p) == 0 {
		return 0, 0
	}
	r, _, e := syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

// rawIO is a polling connection's read or write in progress: its
// buffer and outcome, and the RawConn callback bound once (so a call
// allocates nothing). mu keeps two reads, or two writes, of the
// connection from sharing it (net.Conn allows them at once; the
// proxies do not do it, so it costs an uncontended lock).
type rawIO struct {
	mu   sync.Mutex
	p    []byte
	n    int
	err  error
	step func(fd uintptr) bool
}

// readStep is the callback of a read: done on data, end of file or an
// error; on EAGAIN the net package waits for the socket (or the read
// deadline) and calls again.
func (c *pollConn) readStep(fd uintptr) bool {
	r := &c.rd
	n, e := rawRead(fd, r.p)
	for e == syscall.EINTR {
		n, e = rawRead(fd, r.p)
	}
	switch {
	case e == syscall.EAGAIN:
		return false
	case e != 0:
		r.err = readError(c.TCPConn, e)
	case n == 0:
		r.err = io.EOF
	}
	r.n = n
	return true
}

// readRaw reads as net.Conn's Read does, with a raw system call.
func (c *pollConn) readRaw(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, rerr, err := c.rd.run(c.raw, p, false)
	if err != nil {
		return 0, renameOp(err, "read")
	}
	return n, rerr
}

// run is one read or write (write) of p through raw's waits: what the
// steps did (bytes, their error) and the wait's error (a deadline, a
// closed connection).
func (x *rawIO) run(raw syscall.RawConn, p []byte, write bool) (n int, ioErr, waitErr error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.p, x.n, x.err = p, 0, nil
	if write {
		waitErr = raw.Write(x.step)
	} else {
		waitErr = raw.Read(x.step)
	}
	n, ioErr = x.n, x.err
	x.p, x.err = nil, nil
	return n, ioErr, waitErr
}

// writeStep is the callback of a write: done once all of it is written
// or on an error; on EAGAIN the net package waits for room (or the
// write deadline) and calls again.
func (c *pollConn) writeStep(fd uintptr) bool {
	w := &c.wr
	for w.n < len(w.p) {
		n, e := rawWrite(fd, w.p[w.n:])
		if e == syscall.EAGAIN {
			return false // wait for room
		}
		if e != 0 && e != syscall.EINTR {
			w.err = &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(),
				Err: os.NewSyscallError("write", e)}
			return true
		}
		w.n += n
	}
	return true
}

// Write writes p whole, as net.Conn's Write does, with raw system calls.
func (c *pollConn) Write(p []byte) (int, error) {
	n, werr, err := c.wr.run(c.raw, p, true)
	if werr == nil && err != nil {
		werr = renameOp(err, "write")
	}
	return n, werr
}

// renameOp gives an error of RawConn.Read or Write (a deadline, a closed
// connection) the operation a plain Read or Write names.
func renameOp(err error, op string) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		oe.Op = op
	}
	return err
}
