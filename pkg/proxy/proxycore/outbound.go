package proxycore

import (
	"net"

	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/pkg/proxy/busypoll"
)

// Outbound is one client request on its way to an upstream, over as many
// attempts as the retry rule allows: what the rule must know of it, taken
// before the first write (fasthttp forgets a streamed body once it has
// written it), and what the attempts did. It lives in the caller's pooled
// per-request state and is owned by the goroutine serving the request.
type Outbound struct {
	idempotent bool // by method, RFC 9110 §9.2.2
	streamed   bool // the body streams from the client: it can be read once
	wrote      bool // some attempt called write: bytes may have reached an upstream
	complete   bool // a write of the whole request, body included, succeeded

	up upstreamConn // the upstream connection during Write

	// client is the connection the body comes from, when it can tell
	// whether its reads ended (a chunked body cut between chunks).
	client readEnder

	// peek looks at a pooled connection before the request is written
	// on it; kept across requests (Begin), so it allocates nothing.
	peek peeker

	// held is the request's last write, when it was all of it: the
	// read of the answer's head writes it (Answer), which saves that
	// read a system call that would come up empty (busypoll.Turn).
	held []byte
}

// begin records a request before its first attempt. A body stream of
// length 0 (what fasthttp's server gives a request with Content-Length: 0)
// is no body: nothing of it can be lost.
func (o *Outbound) begin(req *fasthttp.Request) {
	*o = Outbound{idempotent: idempotent(&req.Header), streamed: bodyUnread(req), held: o.held[:0], peek: o.peek}
}

// bodyFrom names the client connection a streamed chunked body is read
// from (a RequestCtx's Conn): it tells a body cut between two chunks
// from a whole one (copyChunks). Trip.Forward calls it after Begin.
func (o *Outbound) bodyFrom(c net.Conn) { o.client, _ = c.(readEnder) }

// idempotent reports whether the method is idempotent (RFC 9110 §9.2.2):
// sending it twice has the effect of sending it once.
func idempotent(h *fasthttp.RequestHeader) bool {
	return h.IsGet() || h.IsHead() || h.IsOptions() || h.IsTrace() || h.IsPut() || h.IsDelete()
}

// Wrote reports whether some attempt began writing the request.
func (o *Outbound) Wrote() bool { return o.wrote }

// Streamed reports whether the request's body streams from the client.
func (o *Outbound) Streamed() bool { return o.streamed }

// maySendAgain is the retry rule (see the package documentation): after
// an attempt failed with err, may the request be sent again? It is the
// only place the rule is decided; callers add their own policy (deadlines,
// how many tries) on top, never a way around it.
func (o *Outbound) maySendAgain(err error) bool {
	switch {
	case err == nil || IsClientError(err):
		return false
	case !o.wrote:
		return true // nothing of it reached an upstream
	case IsNotSent(err):
		return !o.streamed // it reached the next hop, not the app: sent again if the body can be
	}
	return o.resendable() && IsConnError(err) && !IsTimeout(err)
}

// resendable: the request may be sent again even after bytes of it
// reached an upstream.
func (o *Outbound) resendable() bool { return o.idempotent && !o.streamed }

// clientBodyUnread reports whether the client's streamed body was not read
// to its end: the caller must then close the client's connection after
// answering (ctx.SetConnectionClose()), or the rest of the body would be
// parsed as the next request. A body never touched may be skipped instead.
func (o *Outbound) clientBodyUnread() bool { return o.streamed && !o.complete }

// bodyUnread reports whether req has a streamed body that nobody has
// read (a request answered without forwarding it): the caller must then
// skip the body or close the client's connection after answering.
func bodyUnread(req *fasthttp.Request) bool {
	return req.IsBodyStream() && req.Header.ContentLength() != 0
}

// write writes req on conn through hc's pooled writer, and flushes it. A
// failure to read the client's streamed body comes back as a
// *ClientError, a timeout as it is, and any other error as a *WriteError:
// the upstream's connection failed. Once Write is called,
// the request counts as sent (Wrote), unless it returns ErrStaleConn.
//
// No request is written on a pooled connection that is not clean: one
// whose peer has closed it (a keep-alive connection the upstream closed
// while idle, the common way to lose a request the rule would not let be
// sent again) or sent bytes on it while it was idle (an answer's leftover,
// which the next read would take as this request's answer: another
// client's bytes). Write then returns ErrStaleConn (ErrUnsolicited for
// bytes), having sent nothing, and the caller closes the connection and
// takes another. Go's Transport notices both the same way, with the read
// it keeps on every idle connection; here it is a peek (one non-blocking
// system call) before every request, whatever its method. This narrows
// the race with a peer that closes, it cannot close it: the peer may
// close just after.
func (o *Outbound) write(hc *fasthttp.HostClient, conn net.Conn, req *fasthttp.Request) error {
	switch o.peek.peek(conn) {
	case peerAlive:
	case PeerClosed:
		return errStaleConn // nothing written: the caller takes another connection
	default:
		return errUnsolicited
	}
	o.wrote = true
	// A body without Content-Type goes without one: fasthttp would name
	// it application/octet-stream, a field the client never sent.
	req.Header.SetNoDefaultContentType(true)
	o.up = upstreamConn{Conn: conn, held: o.held[:0]}
	bw := hc.AcquireWriter(&o.up) // sees the upstream's errors, and only those
	var err error
	if streamsChunked(req) {
		err = writeChunked(bw, req, o.client) // with the trailer fields the client sends after its body
	} else {
		err = req.Write(bw)
	}
	if err == nil {
		o.up.hold = true // the last write: held if it is the whole request
		err = bw.Flush()
	}
	hc.ReleaseWriter(bw)
	upErr := o.up.err
	o.held = o.up.held
	o.up = upstreamConn{}
	switch {
	case err == nil:
		o.complete = true
		return nil
	case upErr == nil && o.streamed:
		// Every write to the upstream succeeded, so reading the client's
		// body failed (fasthttp reads it while writing).
		return &clientError{Err: err}
	case IsTimeout(err):
		return err
	}
	return &writeError{Err: err}
}

// answer is the connection the answer to the request Write wrote is read
// from: when Write held the request (it fitted in one write), the first
// read writes it first (busypoll.Turn). held is the Outbound's buffer.
func (o *Outbound) answer(conn net.Conn) answerConn {
	return answerConn{Conn: conn, held: o.held}
}

// answerConn reads an upstream's answer, writing the request first if it
// was held (Outbound.Answer). WriteErr is the failure of that write.
type answerConn struct {
	net.Conn
	held     []byte
	WriteErr error

	// The bytes of the first read, in the reader's buffer, and the
	// number of reads: what announcedLength looks at.
	first []byte
	reads int
}

func (c *answerConn) Read(p []byte) (int, error) {
	var n int
	var err error
	if len(c.held) == 0 {
		n, err = c.Conn.Read(p)
	} else {
		w := c.held
		c.held = nil
		var werr error
		n, werr, err = busypoll.Turn(c.Conn, w, p)
		if werr != nil {
			c.WriteErr = werr
			return 0, werr
		}
	}
	if c.reads == 0 {
		c.first = p[:n]
	}
	c.reads++
	return n, err
}

// upstreamConn records the first write error of the upstream connection,
// so a failed write tells the upstream's fault from the client's. The
// last write (hold), when it is the first, is held instead: all of the
// request, which the read of the answer writes (Outbound.Answer). It does
// not implement io.ReaderFrom: bufio.Writer would otherwise hand it the
// client's body to read, mixing the two sides' errors.
type upstreamConn struct {
	net.Conn
	err   error
	wrote bool   // a write went to the connection
	hold  bool   // the next write is the last
	held  []byte // the held request
}

func (c *upstreamConn) Write(p []byte) (int, error) {
	if c.hold && !c.wrote {
		c.held = append(c.held[:0], p...)
		return len(p), nil
	}
	c.wrote = true
	n, err := c.Conn.Write(p)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}
