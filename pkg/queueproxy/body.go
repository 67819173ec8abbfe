package queueproxy

import (
	"bufio"
	"io"
	"net"
)

// bodyStream streams a response body from the app to the client. The
// fasthttp server reads it after the handler returned and closes it when the
// body is written (or the client is gone); Close returns the connection to
// the pool and finishes the exchange, so a long response counts as in
// flight, and holds its breaker slot, until its last byte.
//
// Owner: the goroutine that writes the response (one at a time); pooled.
type bodyStream[C clientConn] struct {
	u         *hostUpstream[C]
	x         *exchange
	cc        C
	conn      net.Conn
	br        *bufio.Reader
	status    int
	keepAlive bool

	length int64 // Content-Length; -1 chunked; -2 until the app closes
	left   int64 // bytes left when length >= 0
	chunks chunkedReader
	eof    bool  // the whole body was read
	err    error // the first read error; the connection is not reused
}

func (s *bodyStream[C]) start(u *hostUpstream[C], x *exchange, cc C, conn net.Conn, br *bufio.Reader, status, length int, keepAlive bool) {
	s.u, s.x, s.cc, s.conn, s.br = u, x, cc, conn, br
	s.status, s.keepAlive = status, keepAlive
	s.length, s.left = int64(length), int64(length)
	s.eof, s.err = false, nil
	if length == -1 {
		s.chunks.reset(br)
	}
}

// Read implements io.Reader. With an idle timeout, every read pushes the
// connection's deadline forward.
func (s *bodyStream[C]) Read(p []byte) (int, error) {
	switch {
	case s.eof:
		return 0, io.EOF
	case s.err != nil:
		return 0, s.err
	}
	if s.u.idle > 0 {
		if err := s.conn.SetReadDeadline(s.x.bodyDeadline(s.u.now())); err != nil {
			s.err = err
			return 0, err
		}
	}
	n, err := s.read(p)
	switch {
	case err == io.EOF:
		s.eof = true
	case err != nil:
		s.err = err
	}
	return n, err
}

func (s *bodyStream[C]) read(p []byte) (int, error) {
	switch {
	case s.length == -1:
		return s.chunks.Read(p)
	case s.length < 0: // until close: the connection cannot be reused
		s.keepAlive = false
		return s.br.Read(p)
	case s.left == 0:
		return 0, io.EOF
	}
	if int64(len(p)) > s.left {
		p = p[:s.left]
	}
	n, err := s.br.Read(p)
	s.left -= int64(n)
	switch {
	case s.left == 0:
		return n, io.EOF
	case err == io.EOF:
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

// Close releases the connection (to the pool only if the body was read to
// its end) and finishes the exchange.
func (s *bodyStream[C]) Close() error {
	u, x := s.u, s.x
	u.done(s.cc, s.br, s.keepAlive && s.eof)
	status := s.status
	var zero C
	s.x, s.cc, s.conn, s.br, s.err = nil, zero, nil, nil, nil
	s.chunks.reset(nil)
	u.streams.Put(s)
	x.finish(u.now(), status)
	return nil
}
