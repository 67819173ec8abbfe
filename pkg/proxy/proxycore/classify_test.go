package proxycore

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/valyala/fasthttp"
)

func TestClassify(t *testing.T) {
	type class struct{ Timeout, Dial, Conn, NothingRead, Client bool }
	tests := []struct {
		name string
		err  error
		want class
	}{
		{name: "refused", err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, want: class{Dial: true, Conn: true}},
		{name: "dial timeout", err: fasthttp.ErrDialTimeout, want: class{Timeout: true, Dial: true, Conn: true}},
		{name: "fasthttp timeout", err: fasthttp.ErrTimeout, want: class{Timeout: true}},
		{name: "read deadline", err: &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, want: class{Timeout: true}},
		{name: "wrapped deadline", err: fmt.Errorf("reading the body: %w", os.ErrDeadlineExceeded), want: class{Timeout: true}},
		{name: "reset", err: &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, want: class{Conn: true}},
		{name: "eof before the response", err: io.EOF, want: class{Conn: true, NothingRead: true}},
		{name: "nothing read", err: fasthttp.ErrNothingRead{}, want: class{Conn: true, NothingRead: true}},
		{name: "closed before the response", err: fasthttp.ErrConnectionClosed, want: class{Conn: true}},
		{name: "write failed", err: &writeError{Err: errors.New("fasthttputil: connection closed")}, want: class{Conn: true}},
		{name: "client body", err: &clientError{Err: fasthttp.ErrBrokenChunk{}}, want: class{Client: true}},
		{name: "malformed response", err: errors.New("cannot parse response status line"), want: class{}},
		{name: "unexpected 101", err: errUnexpectedSwitch, want: class{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := class{IsTimeout(tt.err), IsDialError(tt.err), IsConnError(tt.err), isNothingRead(tt.err), IsClientError(tt.err)}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("classes of %v (-want +got):\n%s", tt.err, diff)
			}
		})
	}
}
