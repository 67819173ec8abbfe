package queueproxy

import (
	"bufio"
	"net"

	"ebb.dev/ebb/pkg/proxycore"
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
	body      proxycore.ResponseBody
	err       error // a deadline could not be set; the connection is not reused
}

func (s *bodyStream[C]) start(u *hostUpstream[C], x *exchange, cc C, conn net.Conn, br *bufio.Reader, status, length int, keepAlive bool) {
	s.u, s.x, s.cc, s.conn, s.br = u, x, cc, conn, br
	s.status, s.keepAlive, s.err = status, keepAlive, nil
	s.body.Reset(br, length)
}

// Read implements io.Reader. With an idle timeout, every read pushes the
// connection's deadline forward.
func (s *bodyStream[C]) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.u.idle > 0 {
		if err := s.conn.SetReadDeadline(s.x.bodyDeadline(s.u.now())); err != nil {
			s.err = err
			return 0, err
		}
	}
	return s.body.Read(p)
}

// Close releases the connection (to the pool only if the body was read to
// its end) and finishes the exchange.
func (s *bodyStream[C]) Close() error {
	u, x := s.u, s.x
	u.done(s.cc, s.br, s.keepAlive && s.err == nil && s.body.Reusable())
	status := s.status
	var zero C
	s.x, s.cc, s.conn, s.br, s.err = nil, zero, nil, nil, nil
	s.body.Reset(nil, 0)
	u.streams.Put(s)
	x.finish(u.now(), status)
	return nil
}
