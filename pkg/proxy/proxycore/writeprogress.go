package proxycore

import (
	"errors"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"ebb.dev/ebb/pkg/proxy/h2c"
)

// A client that does not read its answer must not hold what it was
// given (a connection, a replica's slot, a breaker's) for as long as it
// likes. Every write toward a client therefore has a deadline, and the
// deadline measures progress: a slow download that keeps taking bytes is
// never cut; one that takes nothing for the write timeout is. On
// HTTP/1.1 a write whose deadline passed after the client took part of it
// goes on with a new deadline (so a client is cut at most twice the
// timeout after it stopped, and one that takes a byte a timeout is kept);
// on HTTP/2, where a missed deadline resets the stream, each piece of
// 16 KiB must be taken within the timeout (ProgressWriter).
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

	// chunks meters a chunked body's non-data bytes; owned by the
	// goroutine reading the connection (chunkext.go).
	chunks    chunkMeter
	chunkBody meteredChunks // the metered stream (no allocation per body)
}

func (c *progressConn) Write(p []byte) (int, error) {
	if c.answer.hold(p) {
		return len(p), nil
	}
	if err := c.flushAnswer(); err != nil {
		return 0, err
	}
	written := 0
	for {
		if err := c.armWrite(); err != nil {
			return written, err
		}
		n, err := c.Conn.Write(p[written:])
		written += n
		if n == 0 || err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
			return written, err
		}
		// The client took some of p within the timeout: slow, not gone.
		// The deadline passed, so armWrite sets the next one.
	}
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

// ProgressWriter bounds the progress of a response written through w:
// each piece of it must be taken within timeout. The stream's write
// deadline (http.ResponseController) is set before a write, moved on as
// its pieces go (at most once per eighth of the timeout), and cleared
// after it, so a response that waits for its upstream is never cut, and
// neither is a client that keeps taking it, however slowly; one that
// takes nothing for the timeout is. On HTTP/2 a missed deadline resets the
// stream; on HTTP/1.1 it fails the connection. It keeps w's Flush and
// Unwrap (ResponseController reaches the server's writer through it). r is
// w's request: an HTTP/2 stream of h2c.Server finds its connection's
// send windows in its context (h2c.SendFlowOf).
//
// Before, the deadline covered each write whole (ReverseProxy's 32 KiB):
// an HTTP/2 client granting window at less than 32 KiB per timeout (about
// 1.1 KB/s at 30 s) was cut while it kept reading.
func ProgressWriter(w http.ResponseWriter, r *http.Request, timeout time.Duration) http.ResponseWriter {
	return &progressWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: timeout, slack: timeout / 8,
		flow: h2c.SendFlowOf(r.Context())}
}

// progressPiece is the most of a write one deadline covers when the
// write may wait for flow-control window, and so the least a client must
// grant per write timeout to keep its stream: 16 KiB, one DATA frame of
// the default size (546 B/s at 30 s). "Slow but moving" is defined by
// bytes delivered, not by window granted: a client that grants a trickle
// of window (4 KiB every 20 s against 30 s) is reset within the timeout,
// and with it what the proxies held for its stream
// (h2c.StreamReceiveWindow).
//
// A piece is one hand-off to the server's frame writer, so pieces cost
// throughput (a fast download through 16 KiB pieces ran at 0.72x the
// speed of 32 KiB writes, BenchmarkProgressWriterHTTP2). A handler sees
// neither the client's window nor the part of a piece already sent, so a
// larger piece that waits for window either needs more per timeout (a
// larger floor) or a longer deadline (a stopped client cut later): a
// client with a 64 KiB window taken at full speed, then read at 20 KiB
// per timeout, would be reset on its first blocked 32 KiB piece
// (TestProgressWriterHTTP2SlowWindow). What the handler can learn is
// whether the window is open: the connection's ledger (h2c.SendFlow) says
// when every stream of the connection has room for a write, and then it
// goes whole, up to progressWhole, waiting for nothing but TCP.
const progressPiece = 16 << 10

// progressWhole is the most of a write that goes in one piece when the
// client's windows have room for it: ReverseProxy's writes. Such a piece
// waits only for TCP, where a client that takes nothing is cut by the
// connection's write timeout (h2c.ServerOptions.WriteTimeout), and one
// that takes bytes must take this many per timeout (1.1 KB/s at 30 s).
const progressWhole = 32 << 10

type progressWriter struct {
	http.ResponseWriter
	rc             *http.ResponseController
	flow           *h2c.SendFlow // the connection's send windows (nil: unknown, every piece may wait for window)
	timeout, slack time.Duration
	armed          time.Time // the deadline in force (zero: none)
}

func (w *progressWriter) Write(p []byte) (int, error) {
	written := 0
	for {
		w.arm()
		piece := min(len(p)-written, progressPiece)
		whole := min(len(p)-written, progressWhole)
		open := whole > piece && w.flow.Take(whole)
		if open {
			piece = whole
		}
		n, err := w.ResponseWriter.Write(p[written : written+piece])
		if open {
			w.flow.Give(whole)
		}
		written += n
		if err != nil || written == len(p) {
			w.disarm()
			return written, err
		}
	}
}

// arm makes sure the deadline in force is at least timeout-slack away.
// A writer without deadlines is unbounded, as before.
func (w *progressWriter) arm() {
	now := time.Now()
	if !w.armed.IsZero() && w.armed.Sub(now) >= w.timeout-w.slack {
		return
	}
	w.armed = now.Add(w.timeout)
	_ = w.rc.SetWriteDeadline(w.armed)
}

func (w *progressWriter) disarm() {
	w.armed = time.Time{}
	_ = w.rc.SetWriteDeadline(time.Time{})
}

// FlushError flushes within the timeout (ResponseController.Flush and
// ReverseProxy's flushes come here).
func (w *progressWriter) FlushError() error {
	w.arm()
	err := w.rc.Flush()
	w.disarm()
	return err
}

func (w *progressWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
