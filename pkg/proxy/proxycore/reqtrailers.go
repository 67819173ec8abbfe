package proxycore

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/valyala/fasthttp"
)

// A chunked request body that streams from the client may end with
// trailer fields. fasthttp's server reads them into the request head when
// the body ends (after the proxy has written the head upstream), and
// fasthttp's Request.Write sends after the body only the fields the client
// announced in its Trailer header. writeChunked writes such a request
// itself, so that every trailer field the client sent reaches the
// upstream, announced or not, as net/http's ReverseProxy forwards them.
// Requests with a Content-Length (the common case) take fasthttp's path.

// errHostRequired is fasthttp's refusal of a request with no host.
var errHostRequired = errors.New("request has no host (no Host header and no host in its URI)")

// chunkBufs holds the copy buffers of writeChunked.
var chunkBufs = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// streamsChunked reports whether req's body streams from the client in
// the chunked coding (and so may end with trailer fields).
func streamsChunked(req *fasthttp.Request) bool {
	return req.IsBodyStream() && req.Header.ContentLength() == -1
}

// writeChunked writes req (a streamsChunked request) to w: the head as
// Request.Write writes it, the body in the chunked coding as it arrives
// (each chunk flushed, so the upstream sees a slow upload as it comes),
// then the trailer fields the client sent after its body. A failure to
// read the client's body is returned as it is; Outbound.Write tells it
// from the upstream's. A body that did not end with its last chunk and
// trailer section is such a failure (copyChunks): nothing after the
// chunks it had is written, and the caller closes the upstream's
// connection, so the upstream sees an aborted body, never a short one
// that looks whole. client is the connection the body comes from (nil:
// unknown).
func writeChunked(w *bufio.Writer, req *fasthttp.Request, client readEnder) error {
	h := &req.Header
	uri := req.URI()
	if len(uri.Username()) > 0 {
		// A request-target with user info becomes an Authorization header
		// in Request.Write; such requests keep its path (only announced
		// trailers are forwarded).
		return req.Write(w)
	}
	switch {
	case len(h.Host()) > 0 && req.UseHostHeader:
	case len(uri.Host()) > 0:
		h.SetHostBytes(uri.Host())
	case len(h.Host()) == 0:
		return errHostRequired
	}
	h.SetRequestURIBytes(uri.RequestURI())
	h.SetContentLength(-1)
	before := len(h.PeekKeys()) // the trailer fields will follow these
	if err := h.Write(w); err != nil {
		return err
	}
	bp := chunkBufs.Get().(*[]byte)
	defer chunkBufs.Put(bp)
	body, meter := meterChunks(req.BodyStream(), client) // extensions within net/http's budget (chunkext.go)
	err := copyChunks(w, body, *bp, client)
	meter.stop()
	if err != nil {
		return err
	}
	_, _ = w.WriteString("0\r\n")
	writeReceivedTrailers(w, h, before)
	_, err = w.WriteString("\r\n") // bufio.Writer's first error, if any
	return err
}

// errBodyCut: a chunked request body whose client stopped sending (its
// connection's end, FIN or RST) before the last chunk and the trailer
// section. It wraps io.ErrUnexpectedEOF.
var errBodyCut = fmt.Errorf("the client's chunked body ended before its last chunk: %w", io.ErrUnexpectedEOF)

// readEnder is a client connection that knows whether its reads came to
// an end (progressConn).
type readEnder interface{ ReadEnded() bool }

// copyChunks copies the client's body from r (fasthttp's body stream) to
// w as chunks, flushing each. Only the end of the chunked coding (its
// last chunk and trailer section) ends the body; anything else is an
// error. fasthttp's stream reports most cut bodies as errors (wrapping
// io.EOF: a cut chunk, size line or CRLF), but a connection that ends
// exactly between two chunks, or within the trailer section, comes back
// as the plain io.EOF of a whole body. The two differ in the connection:
// a whole body's end is parsed from bytes that came with a successful
// read (a TCP read returns either bytes or the end, never both), a cut
// one's only after a read found the end (or failed). So a plain io.EOF
// once client's reads ended is ErrBodyCut. With client nil (a connection
// that cannot tell, never a proxy's) the plain io.EOF is taken as whole.
func copyChunks(w *bufio.Writer, r io.Reader, buf []byte, client readEnder) error {
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if werr := writeChunk(w, buf[:n]); werr != nil {
				return werr
			}
		}
		switch {
		case err == io.EOF && client != nil && client.ReadEnded():
			return errBodyCut
		case err == io.EOF:
			return nil
		case err != nil:
			return err // a cut chunk: fasthttp's ErrBrokenChunk wrapping io.EOF is no end either
		}
	}
}

// writeChunk writes one chunk of the chunked coding and flushes it. A
// bufio.Writer keeps its first error and refuses later writes, so Flush
// reports a failure of any of them.
func writeChunk(w *bufio.Writer, b []byte) error {
	var size [16]byte
	_, _ = w.Write(strconv.AppendInt(size[:0], int64(len(b)), 16))
	_, _ = w.WriteString("\r\n")
	_, _ = w.Write(b)
	_, _ = w.WriteString("\r\n")
	return w.Flush()
}

// writeReceivedTrailers writes the fields fasthttp appended to h while
// reading the body's trailer section: the ones past the first before
// fields, which come last but for a closing Connection: close (h.All's
// order; fasthttp has already refused names that must not be trailers).
// Write errors stay in w (see writeChunk).
func writeReceivedTrailers(w *bufio.Writer, h *fasthttp.RequestHeader, before int) {
	total := len(h.PeekKeys())
	last := total
	if h.ConnectionClose() {
		last-- // All yields Connection: close after the fields
	}
	first := last - (total - before)
	i := 0
	for k, v := range h.All() {
		if i >= first && i < last {
			_, _ = w.Write(k)
			_, _ = w.WriteString(": ")
			_, _ = w.Write(v)
			_, _ = w.WriteString("\r\n")
		}
		i++
	}
}
