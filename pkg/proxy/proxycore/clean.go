package proxycore

import (
	"bufio"
	"bytes"
	"sync/atomic"

	"github.com/valyala/fasthttp"
)

// An answer belongs to one request. A pooled upstream connection goes
// back to the pool only if it is clean: nothing is left in its reader
// after the answer (bytes the upstream sent past the answer's end: a
// body after a HEAD or 204 answer, more than its Content-Length), the
// answer's framing was not ambiguous (answerFraming), and, before it
// carries the next request, its peer has neither closed it nor sent
// anything while it was idle (Outbound.Write's peek). Otherwise the
// upstream's stray bytes would be read as the next request's answer, and
// reach another client. Go's Transport closes a connection in the same
// cases (its read loop finds bytes while no request is waiting for them:
// "Unsolicited response received on idle HTTP channel").

// ConnChecks counts the upstream connections a hop closed instead of
// pooling, because they were not clean. A proxy owns one, reads it for its
// metrics, and hands it to its Trips (Trip.Init); updates are atomic.
type ConnChecks struct {
	// Unsolicited: bytes were waiting on the connection after an answer,
	// or arrived on it while it was idle.
	Unsolicited atomic.Int64
	// Ambiguous: the upstream framed an answer ambiguously (both
	// Content-Length and chunked; a body announced on 204 or 304).
	Ambiguous atomic.Int64
}

func (c *ConnChecks) unsolicited() {
	if c != nil {
		c.Unsolicited.Add(1)
	}
}

func (c *ConnChecks) ambiguous() {
	if c != nil {
		c.Ambiguous.Add(1)
	}
}

// release returns an upstream connection to the pool if keepAlive and
// nothing is left in its reader after the answer; otherwise it closes it
// (counting stray bytes).
func (t *Trip) release(hc *fasthttp.HostClient, up pooledConn, br *bufio.Reader, keepAlive bool) {
	if keepAlive && br.Buffered() > 0 {
		keepAlive = false
		t.checks.unsolicited()
	}
	done(hc, up, br, keepAlive)
}

// framingClear reports whether the answer just read may leave its
// connection reusable as far as its framing goes (RFC 9112 §6.1, §6.3):
// not with both Content-Length and Transfer-Encoding (fasthttp frames it
// by the chunked coding and forgets the Content-Length, as the RFC
// allows, but the upstream may have meant the other, and the bytes
// between the two ends would be taken as the next answer), nor a 204
// that announces a body, nor a 304 that announces a chunked one (a
// Content-Length on a 304 is the representation's size, which is
// allowed). The client gets the answer framed by fasthttp (one framing,
// never both); the connection is closed after it.
func (t *Trip) framingClear(resp *fasthttp.Response) bool {
	h := &resp.Header
	cl := h.ContentLength()
	switch sc := resp.StatusCode(); {
	case sc == fasthttp.StatusNoContent && cl != 0 && cl != -2:
		return false
	case sc == fasthttp.StatusNotModified && cl == -1:
		return false
	case cl != -1:
		return true // no Transfer-Encoding: it is chunked or refused by fasthttp
	}
	return !t.answer.announcedLength()
}

// announcedLength reports whether the head of the answer read on c
// (skipping interim 1xx heads) has a Content-Length field. It looks at
// the bytes of the connection's first read, which the reader's buffer
// still holds unchanged (the read went into it, and the buffer is only
// written by reads). A head that needed more than one read cannot be
// seen that way: it counts as having one, so the connection is closed,
// which is safe and rare (heads fit in a segment).
func (c *answerConn) announcedLength() bool {
	if c.reads != 1 {
		return true
	}
	b := c.first
	for {
		status, rest, ok := bytes.Cut(b, []byte("\n"))
		if !ok {
			return true
		}
		cl, end, complete := scanHead(rest)
		if !complete {
			return true
		}
		if !interim(status) {
			return cl
		}
		b = end
	}
}

// scanHead scans the field lines of a head up to its empty line: whether
// one is Content-Length, and the bytes after the head.
func scanHead(b []byte) (cl bool, rest []byte, complete bool) {
	for {
		line, after, ok := bytes.Cut(b, []byte("\n"))
		if !ok {
			return cl, nil, false
		}
		if len(line) == 0 || len(line) == 1 && line[0] == '\r' {
			return cl, after, true
		}
		cl = cl || isField(line, "content-length")
		b = after
	}
}

// interim reports whether a status line is a 1xx one other than 101
// (ReadHead skips those).
func interim(status []byte) bool {
	_, code, _ := bytes.Cut(status, []byte(" "))
	return len(code) >= 3 && code[0] == '1' && !(code[1] == '0' && code[2] == '1')
}

// isField reports whether a field line has the name (any case, blanks
// allowed before the colon as fasthttp allows them). name is lower case
// ASCII. framingOf asks it of a request's Content-Type line, so of most
// requests with a body: it compares bytes, without bytes.EqualFold's
// Unicode folding and bytes.TrimLeft's set (a third of framingOf's cost).
func isField(line []byte, name string) bool {
	if len(line) <= len(name) {
		return false
	}
	for i := range len(name) {
		if lowerASCII(line[i]) != name[i] {
			return false
		}
	}
	for _, b := range line[len(name):] {
		if b != ' ' && b != '\t' {
			return b == ':'
		}
	}
	return false
}

// lowerASCII is b in lower case if it is an ASCII letter.
func lowerASCII(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

// noBodyFraming drops Transfer-Encoding from an answer that has no body
// by its status (204, 304; RFC 9112 §6.1 forbids it on a 204), so no
// client reads one after it. A HEAD answer keeps its fields: they say how
// a GET would be answered.
func noBodyFraming(req *fasthttp.Request, resp *fasthttp.Response) {
	if resp.Header.ContentLength() == -1 && !req.Header.IsHead() {
		resp.Header.Del(fasthttp.HeaderTransferEncoding) // fasthttp writes no Content-Length on 204 and 304
	}
}
