package proxycore

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/pkg/proxy/busypoll"
)

// The reads of a client connection (progressConn) cost what a server's
// reads cost, less two things done on every keep-alive request.
//
// Deadlines kept, not set again. A server sets a read deadline before
// each wait for a request and again when its head begins (fasthttp: the
// idle timeout, then the head's), each a timer update. progressConn
// records the deadline asked for and arms it only when a read is about
// to wait and the one in force is not within slack of it: no more than
// min(1/8 of the time left, 1 s) sooner (a deadline fires that much early
// at most, as the write deadlines do; never later). A deadline asked for
// while a read is in progress (another goroutine interrupting it) is
// armed at once.
//
// The answer written by the next read. After a complete answer, the
// server's next read waits for the client's next request, and the first
// try of that read almost always comes up empty: a system call for
// nothing. The answer is held instead (HoldAnswer), and that read writes
// it and then waits without a read that comes up empty (busypoll.Turn).
// That is sound only if no byte of the next request arrived before the
// write (the poller forgets a readiness signal it already had): a client
// that pipelines may have sent it. So the wait is bounded by
// answerProbe: if nothing arrived by then, the read tries once and waits
// as usual. A pipelined request that came at the wrong moment is served
// that much later; no connection waits for what it already has.

// answerProbe bounds the wait of a read that wrote a held answer before
// it tries a read (see above): long beside the gaps between the requests
// of a busy keep-alive connection, short for a request that a client
// pipelined.
const answerProbe = 50 * time.Millisecond

// maxHeldAnswer bounds the answer held: fasthttp's write buffer (4 KiB)
// writes a larger one in several writes anyway.
const maxHeldAnswer = 4 << 10

// holdAnswer lets the answer to ctx's request, once complete in
// ctx.Response (not streamed, no tunnel, the connection kept), be written
// by the read of the next request (see above). NewServer calls it after
// the handler.
func holdAnswer(ctx *fasthttp.RequestCtx) {
	if c, ok := ctx.Conn().(*progressConn); ok {
		// Set either way: a pipelined request's answer may follow an
		// earlier one in the same write, and a stream must go at once.
		c.answer.next = !ctx.Hijacked() && !ctx.Response.IsBodyStream() && !ctx.Response.ConnectionClose() &&
			!ctx.Request.Header.ConnectionClose()
	}
}

// sendHeldAnswer writes the answer held for the read of the next request
// when that request came without a read: a client pipelined it, and it was
// already in the server's read buffer. The answer then goes before the
// request is served, as net/http's would, not after it (a slow request
// would hold a fast one's answer for as long as it takes). NewServer
// calls it before the handler; without a held answer it costs a failed
// compare-and-swap.
func sendHeldAnswer(ctx *fasthttp.RequestCtx) {
	if c, ok := ctx.Conn().(*progressConn); ok {
		if err := c.flushAnswer(); err != nil {
			ctx.SetConnectionClose() // the client is gone or stalled; nothing more is written to it
		}
	}
}

// heldAnswer is an answer written by the next read (HoldAnswer). next
// and buf belong to the connection's server goroutine; state hands buf
// over to a Close from another goroutine (a server's shutdown).
type heldAnswer struct {
	next  bool // the next write is a complete answer
	buf   []byte
	state atomic.Int32 // answerNone, answerHeld, answerWriting
}

const (
	answerNone = iota
	answerHeld
	answerWriting
)

// hold keeps p if it is the answer HoldAnswer announced.
func (a *heldAnswer) hold(p []byte) bool {
	if !a.next {
		return false
	}
	a.next = false
	if len(p) > maxHeldAnswer || a.state.Load() != answerNone {
		return false
	}
	a.buf = append(a.buf[:0], p...)
	a.state.Store(answerHeld)
	return true
}

// take claims the held answer for writing: done must follow a true.
func (a *heldAnswer) take() bool { return a.state.CompareAndSwap(answerHeld, answerWriting) }

func (a *heldAnswer) done() { a.state.Store(answerNone) }

// flushAnswer writes a held answer now (a write or a close comes first).
func (c *progressConn) flushAnswer() error {
	if !c.answer.take() {
		return nil
	}
	defer c.answer.done()
	if err := c.armWrite(); err != nil {
		return err
	}
	_, err := c.Conn.Write(c.answer.buf)
	return err
}

// Close writes a held answer first (a server closing the connection
// after its last answer).
func (c *progressConn) Close() error {
	_ = c.flushAnswer()
	return c.Conn.Close()
}

// readDeadlines are a connection's read deadlines, as times since
// clockBase (0: none): the one asked for and the one in force. mu
// orders a read's arming against a deadline set by another goroutine.
type readDeadlines struct {
	mu      sync.Mutex
	want    int64
	armed   int64
	reading bool
}

// SetReadDeadline records t; it is armed by the next read that waits,
// or at once if a read is in progress.
func (c *progressConn) SetReadDeadline(t time.Time) error {
	r := &c.reads
	r.mu.Lock()
	defer r.mu.Unlock()
	r.want = sinceBase(t)
	if !r.reading {
		return nil
	}
	return c.armRead(r.want)
}

// armRead puts deadline d in force (mu held).
func (c *progressConn) armRead(d int64) error {
	if err := c.Conn.SetReadDeadline(fromBase(d)); err != nil {
		return err
	}
	c.reads.armed = d
	return nil
}

func fromBase(d int64) time.Time {
	if d == 0 {
		return time.Time{}
	}
	return clockBase.Add(time.Duration(d))
}

// keeps reports whether the deadline in force may stand for want: the
// same, or no more than the slack sooner.
func keeps(armed, want int64, now time.Duration) bool {
	if armed == want {
		return true
	}
	if armed == 0 || want == 0 || armed > want {
		return false
	}
	slack := min((want-int64(now))/8, int64(time.Second))
	return want-armed <= slack
}

// startRead arms the deadline a read needs, or (answer true) the one for
// a read that writes a held answer first: the deadline asked for, but no
// later than answerProbe from now. It reports the deadline asked for.
func (c *progressConn) startRead(answer bool) (want int64, err error) {
	r := &c.reads
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reading = true
	want = r.want
	if !answer {
		if keeps(r.armed, want, time.Since(clockBase)) {
			return want, nil
		}
		return want, c.armRead(want)
	}
	now := int64(time.Since(clockBase))
	probe := now + int64(answerProbe)
	if want != 0 && want <= probe {
		probe = want
	} else if a := r.armed; a > now+int64(answerProbe)/2 && a <= probe {
		return want, nil // a probe armed by an earlier answer still fits
	}
	return want, c.armRead(probe)
}

func (c *progressConn) endRead() {
	c.reads.mu.Lock()
	c.reads.reading = false
	c.reads.mu.Unlock()
}

// Read reads the next bytes of the client, within the deadline asked
// for; a held answer is written first. While a chunked body is read
// (meterChunks), a read that takes its non-data bytes past the budget
// fails (chunkext.go).
func (c *progressConn) Read(p []byte) (int, error) {
	n, err := c.read(p)
	c.chunks.total += int64(n)
	if c.chunks.over() {
		return 0, errChunkOverhead
	}
	return n, err
}

func (c *progressConn) read(p []byte) (int, error) {
	if c.answer.take() {
		return c.readAfterAnswer(p)
	}
	if _, err := c.startRead(false); err != nil {
		c.endRead()
		return 0, err
	}
	n, err := c.Conn.Read(p)
	c.endRead()
	c.noteReadEnd(err)
	return n, err
}

// ReadEnded reports whether a read of the client's connection failed for
// a reason other than a deadline, or found its end: nothing more comes
// from the client. A chunked body stream that ends after this happened
// ended without its last chunk (bodyEnd).
func (c *progressConn) ReadEnded() bool { return c.readEnded.Load() }

// noteReadEnd records a read's failure or end of stream; a deadline is
// neither (the probe of readAfterAnswer, a server's own deadlines).
func (c *progressConn) noteReadEnd(err error) {
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		c.readEnded.Store(true)
	}
}

// readAfterAnswer writes the held answer, then reads (see above).
func (c *progressConn) readAfterAnswer(p []byte) (int, error) {
	defer c.answer.done()
	if err := c.armWrite(); err != nil {
		return 0, err
	}
	want, err := c.startRead(true)
	if err != nil {
		c.endRead()
		return 0, err
	}
	n, werr, rerr := busypoll.Turn(c.Conn, c.answer.buf, p)
	c.endRead()
	c.noteReadEnd(rerr)
	if busypoll.NotWritten(rerr) {
		// The probe had passed before the turn began (a goroutine slow
		// to run): the answer is still owed, and the client waits for it
		// before it sends anything more.
		if _, err := c.Conn.Write(c.answer.buf); err != nil {
			return 0, err
		}
	}
	switch {
	case werr != nil:
		return 0, werr
	case rerr == nil || !errors.Is(rerr, os.ErrDeadlineExceeded) || c.deadlineReached(want):
		return n, rerr
	}
	// The probe ended the wait: a request may have come before the write.
	if _, err := c.startRead(false); err != nil {
		c.endRead()
		return 0, err
	}
	n, err = c.Conn.Read(p)
	c.endRead()
	c.noteReadEnd(err)
	return n, err
}

// deadlineReached reports whether the deadline asked for has passed.
func (c *progressConn) deadlineReached(want int64) bool {
	return want != 0 && int64(time.Since(clockBase)) >= want
}
