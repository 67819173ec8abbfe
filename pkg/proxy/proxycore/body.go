package proxycore

import (
	"bufio"
	"io"
)

// responseBody reads a response body from an upstream connection's
// reader, framed by its Content-Length, the chunked coding (trailers are
// read and dropped, or forwarded: ForwardTrailers) or the end of the
// connection. It owns no connection:
// the proxy that holds one asks Reusable, once the body has been sent on,
// whether it may go back to the pool. It allocates nothing; the zero value
// is ready for Reset.
//
// Before, the activator used fasthttp's own response stream (a wrapper
// and a pooled reader per streamed response) and the queue-proxy this
// reader; one is enough.
type responseBody struct {
	br     *bufio.Reader
	length int64 // Content-Length; -1 chunked; -2 until the upstream closes
	left   int64 // bytes left when length >= 0
	chunks chunkedReader
	eof    bool  // the whole body was read
	err    error // the first read error
}

// reset starts a body of the given length (fasthttp's ContentLength: -1
// chunked, -2 until close) read from br; Reset(nil, 0) drops the reader.
func (b *responseBody) reset(br *bufio.Reader, length int) {
	*b = responseBody{br: br, length: int64(length), left: int64(length)}
	if length == -1 {
		b.chunks.reset(br)
	}
}

// reusable reports whether the body was read to its end and its framing
// leaves the connection able to carry another response.
func (b *responseBody) reusable() bool { return b.eof && b.length != -2 }

// Read implements io.Reader; after the end or an error it keeps returning
// the same.
func (b *responseBody) Read(p []byte) (int, error) {
	switch {
	case b.eof:
		return 0, io.EOF
	case b.err != nil:
		return 0, b.err
	}
	n, err := b.read(p)
	switch {
	case err == io.EOF:
		b.eof = true
	case err != nil:
		b.err = err
	}
	return n, err
}

func (b *responseBody) read(p []byte) (int, error) {
	switch {
	case b.length == -1:
		return b.chunks.Read(p)
	case b.length < 0: // until close
		return b.br.Read(p)
	case b.left == 0:
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.br.Read(p)
	b.left -= int64(n)
	switch {
	case b.left == 0:
		return n, io.EOF
	case err == io.EOF:
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}
