package activator

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/valyala/fasthttp"
)

func TestCanRetry(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	tests := []struct {
		name     string
		err      error
		streamed bool
		want     bool
	}{
		{name: "refused, buffered body", err: dial, want: true},
		{name: "refused, streamed body", err: dial, streamed: true, want: true},
		{name: "reset, buffered body", err: reset, want: true},
		{name: "reset, streamed body: part of it may be gone", err: reset, streamed: true, want: false},
		{name: "closed before the response", err: fasthttp.ErrConnectionClosed, want: true},
		{name: "eof", err: fmt.Errorf("reading: %w", io.EOF), want: true},
		{name: "dial timeout", err: fasthttp.ErrDialTimeout, streamed: true, want: true},
		{name: "timeout is never retried", err: fasthttp.ErrTimeout, want: false},
		{name: "read deadline is never retried", err: &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, want: false},
		{name: "other error", err: errors.New("malformed response"), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := canRetry(tt.err, tt.streamed); got != tt.want {
				t.Errorf("canRetry(%v, streamed=%v) = %v, want %v", tt.err, tt.streamed, got, tt.want)
			}
		})
	}
}

// slamming is a handler that drops the connection without answering: a
// replica that went away mid-request.
func slamming(ctx *fasthttp.RequestCtx) {
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) { c.Close() })
}

// TestRetryOnAnotherReplica: a replica that refuses or drops connections
// is taken out of rotation and the request goes to another one; POST with
// a buffered body included.
func TestRetryOnAnotherReplica(t *testing.T) {
	h := newHarness(t, nil, rev("hello", 0,
		Replica{Address: "gone:80", Ready: true}, Replica{Address: "slam:80", Ready: true}, Replica{Address: "ok:80", Ready: true}))
	h.backend("slam:80", true).handler = slamming
	h.backend("ok:80", true)
	for i := range 6 {
		code, body, _ := h.do("hello.default", func(r *fasthttp.Request) {
			if i%2 == 1 {
				r.Header.SetMethod("POST")
				r.SetBodyString("payload")
			}
		})
		if code != 200 || body != "hello from ok:80" {
			t.Fatalf("request %d: %d %q, want 200 from ok:80", i, code, body)
		}
	}
	set := h.a.routes.Load().byKey["default/hello"].throttle.set.Load()
	if len(set.replicas) > 2 {
		t.Errorf("%d replicas in rotation, want the failed ones out", len(set.replicas))
	}
}

// TestNoRetryForStreamedBody: a streamed request body half sent cannot be
// sent again: the client gets a 502 that says why.
func TestNoRetryForStreamedBody(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MaxBufferedBody = 16 }, rev("hello", 0,
		Replica{Address: "slam:80", Ready: true}, Replica{Address: "ok:80", Ready: true}))
	h.backend("slam:80", true).handler = slamming
	ok := h.backend("ok:80", true)
	// Only slam:80 in rotation; ok:80 stays up to show nothing reaches it.
	h.platform.set(rev("hello", 0, Replica{Address: "slam:80", Ready: true}))
	h.eventually("one replica", func() bool {
		return len(h.a.routes.Load().byKey["default/hello"].throttle.set.Load().replicas) == 1
	})
	code, body, _ := h.do("hello.default", func(r *fasthttp.Request) {
		r.Header.SetMethod("POST")
		r.SetBodyString(strings.Repeat("z", 1000))
	})
	if code != 502 || !strings.Contains(body, "proxying to the replica at slam:80 failed") {
		t.Errorf("got %d %q, want 502 naming the replica", code, body)
	}
	if ok.served.Load() != 0 {
		t.Errorf("the streamed request reached another replica")
	}
}

// TestRetryWaitsForAReplica: with nowhere to retry, the request waits
// (within its deadline) for a replica to come back.
func TestRetryWaitsForAReplica(t *testing.T) {
	r := rev("hello", 0, Replica{Address: "gone:80", Ready: true})
	h := newHarness(t, nil, r)
	done := make(chan int, 1)
	go func() { code, _, _ := h.do("hello.default", nil); done <- code }()
	h.eventually("request queued after the failure", func() bool { return h.a.global.count.Load() == 1 })
	h.backend("gone:80", true) // the replica comes back and answers its probe
	if code := <-done; code != 200 {
		t.Errorf("status %d, want 200 once the replica is back", code)
	}
}

func TestIsTimeout(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{fasthttp.ErrTimeout, true},
		{&net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, true},
		{fmt.Errorf("reading the response body: %w", os.ErrDeadlineExceeded), true},
		{fasthttp.ErrConnectionClosed, false},
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, false},
	}
	for _, tt := range tests {
		if got := isTimeout(tt.err); got != tt.want {
			t.Errorf("isTimeout(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
