package proxycore

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/valyala/fasthttp"
)

// IsTimeout reports whether a deadline fired: os.ErrDeadlineExceeded, or
// any error that says Timeout() (net.Error, fasthttp.ErrTimeout, which
// fasthttp returns for a deadline hit while reading a head). Any Timeout()
// method counts, not only a net.Error's: fasthttp's own timeout errors are
// not net.Errors.
func IsTimeout(err error) bool {
	if err == nil {
		return false
	}
	var te interface{ Timeout() bool }
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, fasthttp.ErrDialTimeout) ||
		errors.As(err, &te) && te.Timeout()
}

// IsDialError reports whether no connection was made, so nothing was sent.
func IsDialError(err error) bool {
	var op *net.OpError
	var up *fasthttp.ErrDialWithUpstream
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, fasthttp.ErrDialTimeout) ||
		errors.As(err, &op) && op.Op == "dial" || errors.As(err, &up)
}

// IsConnError reports whether the upstream could not be reached or dropped
// the connection before answering.
func IsConnError(err error) bool {
	var we *writeError
	return IsDialError(err) || isNothingRead(err) || errors.As(err, &we) || errors.Is(err, errStaleConn) ||
		errors.Is(err, fasthttp.ErrConnectionClosed) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// isNothingRead reports whether the connection ended before the first
// byte of a response.
func isNothingRead(err error) bool {
	var nr fasthttp.ErrNothingRead
	return errors.Is(err, io.EOF) || errors.As(err, &nr)
}

// errStaleConn: the pooled connection had been closed by the upstream
// while idle; nothing was written on it (Outbound.Write).
var errStaleConn = errors.New("the upstream had closed the pooled connection")

// errUnsolicited: the upstream had sent bytes on the pooled connection
// while it was idle (nothing had asked for them); nothing was written on
// it, and it is closed. It wraps ErrStaleConn: the request goes on
// another connection.
var errUnsolicited = fmt.Errorf("the upstream sent bytes on an idle pooled connection: %w", errStaleConn)

// clientError is a failure on the client's side of the hop: its streamed
// request body could not be read (a malformed chunk, a body shorter than
// its Content-Length, a client gone mid-body). A proxy answers it 400, not
// 502, and closes the client's connection.
type clientError struct{ Err error }

func (e *clientError) Error() string { return "reading the request body: " + e.Err.Error() }
func (e *clientError) unwrap() error { return e.Err }

// IsClientError reports whether err is a ClientError.
func IsClientError(err error) bool {
	var ce *clientError
	return errors.As(err, &ce)
}

// writeError is a failure of the upstream's connection while the request
// was written (a keep-alive connection it had closed, a reset): no byte of
// a response was read. Bytes of the request may have reached it.
type writeError struct{ Err error }

func (e *writeError) Error() string { return "writing the request: " + e.Err.Error() }
func (e *writeError) unwrap() error { return e.Err }
