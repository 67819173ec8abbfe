package proxycore

import (
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"time"
)

// A client that does not read its answer must not hold what it was
// given (a connection, a replica's slot, a breaker's) for as long as it
// likes. Every write toward a client therefore has a deadline measured
// from the write's start: the client must take each piece of the answer
// within the write timeout. A slow download that keeps taking bytes is
// never cut; one that stops is, within the timeout. The pieces are what
// the servers write at once: up to a response's buffered body (64 KiB at
// most) on HTTP/1.1, one copy buffer (32 KiB) on HTTP/2.
//
// HTTP/1.1 (fasthttp's server, and net/http's) gets it from the
// connections its listener hands out (WriteProgressListener); HTTP/2 from
// the server's WriteByteTimeout for the connection (h2c.ServerOptions)
// and, per stream, from a ResponseWriter that sets the stream's write
// deadline around each write and flush (ProgressWriter): a stream the
// client grants no flow-control window blocks only that stream, which
// the connection's timeout cannot see.

// WriteProgressListener makes every connection ln accepts bound each
// write by timeout (a write that has not completed by then fails, and
// the server closes the connection). timeout must be > 0.
func WriteProgressListener(ln net.Listener, timeout time.Duration) net.Listener {
	return &progressListener{Listener: ln, timeout: timeout, slack: min(timeout/8, time.Second)}
}

type progressListener struct {
	net.Listener
	timeout, slack time.Duration
}

func (l *progressListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &progressConn{Conn: c, l: l}, nil
}

// clockBase anchors the monotonic times progressConn keeps as integers.
var clockBase = time.Now()

// progressConn is a client connection whose writes each have a deadline.
// Setting a deadline costs a timer update, so a write reuses the one in
// force while it is at least timeout-slack away: a write gets between
// timeout-slack and timeout, and a busy connection updates its deadline
// at most once per slack. Its reads keep their deadlines the same way,
// and a complete answer is written by the read of the next request
// (clientreads.go).
type progressConn struct {
	net.Conn
	l *progressListener
	// armed is the write deadline in force, as time since clockBase (0:
	// none). Atomic: an HTTP/2 server on an upgraded connection sets
	// deadlines on one goroutine and writes on another.
	armed atomic.Int64

	reads  readDeadlines
	answer heldAnswer

	// readEnded: a read of the client failed or found the end of its
	// stream (FIN, RST); the client sends nothing more (ReadEnded).
	readEnded atomic.Bool
}

func (c *progressConn) Write(p []byte) (int, error) {
	if c.answer.hold(p) {
		return len(p), nil
	}
	if err := c.flushAnswer(); err != nil {
		return 0, err
	}
	if err := c.armWrite(); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// armWrite makes sure the write deadline in force is at least
// timeout-slack away.
func (c *progressConn) armWrite() error {
	now := time.Since(clockBase)
	if a := c.armed.Load(); a == 0 || a-int64(now) < int64(c.l.timeout-c.l.slack) {
		d := now + c.l.timeout
		if err := c.Conn.SetWriteDeadline(clockBase.Add(d)); err != nil {
			return err
		}
		c.armed.Store(int64(d))
	}
	return nil
}

// SetDeadline, SetWriteDeadline: a write deadline someone else sets
// (fasthttp clears them before a hijack, an HTTP/2 server sets its own) is
// the one in force; zero makes the next write set one again. The read
// deadline is the reads' (SetReadDeadline).
func (c *progressConn) SetDeadline(t time.Time) error {
	if err := c.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

func (c *progressConn) SetWriteDeadline(t time.Time) error {
	c.armed.Store(sinceBase(t))
	return c.Conn.SetWriteDeadline(t)
}

func sinceBase(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return max(int64(t.Sub(clockBase)), 1)
}

// SyscallConn exposes the socket underneath (busy polling, peeks).
func (c *progressConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}

// ProgressWriter bounds each write and flush of a response through w by
// timeout: the stream's write deadline (http.ResponseController) is set
// before and cleared after, so a response that waits for its upstream is
// never cut, only one whose client does not take it. On HTTP/2 a missed
// deadline resets the stream; on HTTP/1.1 it fails the connection. It
// keeps w's Flush and Unwrap (ResponseController reaches the server's
// writer through it).
func ProgressWriter(w http.ResponseWriter, timeout time.Duration) http.ResponseWriter {
	return &progressWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: timeout}
}

type progressWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (w *progressWriter) Write(p []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout)) // a writer without deadlines: unbounded, as before
	n, err := w.ResponseWriter.Write(p)
	_ = w.rc.SetWriteDeadline(time.Time{})
	return n, err
}

// FlushError flushes within the timeout (ResponseController.Flush and
// ReverseProxy's flushes come here).
func (w *progressWriter) FlushError() error {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	err := w.rc.Flush()
	_ = w.rc.SetWriteDeadline(time.Time{})
	return err
}

func (w *progressWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
