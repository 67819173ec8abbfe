package activator

import (
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/internal/testnet"
)

// ledgerBackend records what a replica executed: method, path and body
// length of every request its handler saw. The first `slam` requests are
// read whole and then dropped without an answer (a replica that crashed,
// or a keep-alive connection it closed while the request was on its way).
type ledgerBackend struct {
	mu   sync.Mutex
	seen []string
	slam atomic.Int64
}

func (l *ledgerBackend) handle(ctx *fasthttp.RequestCtx) {
	slam := l.slam.Add(-1) >= 0
	n := "unread" // a replica that streams bodies hangs up before reading it
	if !slam || !ctx.Request.IsBodyStream() {
		n = strconv.Itoa(len(ctx.Request.Body()))
	}
	if p := string(ctx.Path()); p != "/after" { // the harness's follow-up request
		l.mu.Lock()
		l.seen = append(l.seen, string(ctx.Method())+" "+p+" "+n)
		l.mu.Unlock()
	}
	if slam {
		slamming(ctx)
		return
	}
	ctx.SetBodyString("ok " + n)
}

func (l *ledgerBackend) executed() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

// rawExchange writes raw to a new connection to the activator and reads
// one response, then, unless the connection closed, sends a second
// request (GET /after) and reads its answer: whatever of the first
// request's body was left unread would come first. closed says the
// activator closed the connection after the first response.
func rawExchange(t *testing.T, h *harness, raw string) (resp *fasthttp.Response, closed bool) {
	t.Helper()
	c, err := h.net.dial("activator:80")
	if err != nil {
		t.Fatal(err)
	}
	return testnet.RawExchange(t, c, raw, "hello.default", "")
}

// smugglingBody is a body of n bytes made of requests (testnet.SmugglingBody).
func smugglingBody(n int) string { return testnet.SmugglingBody(n, "hello.default") }

// TestStreamedBodyNeverSentTwice (issue 12, item 1): a streamed body (over
// the buffer, fixed length or chunked) whose first attempt reached a
// replica that then dropped the connection is never sent again: today it
// was, truncated to what fasthttp had prefetched, and the rest of the
// client's body was then parsed as new requests.
func TestStreamedBodyNeverSentTwice(t *testing.T) {
	for _, tc := range []struct {
		chunked bool
		early   bool // the replica drops the connection before reading the body
	}{{false, false}, {true, false}, {false, true}, {true, true}} {
		chunked := tc.chunked
		t.Run(fmt.Sprintf("chunked=%v,early=%v", tc.chunked, tc.early), func(t *testing.T) {
			h := newHarness(t, func(o *Options) { o.MaxBufferedBody = 1 << 10 },
				rev("hello", 0, Replica{Address: "r1:80", Ready: true}))
			l := &ledgerBackend{}
			l.slam.Store(1)
			h.backendWith("r1:80", true, func(s *fasthttp.Server) { s.StreamRequestBody = tc.early }).handler = l.handle
			body := smugglingBody(100 << 10)
			head := "POST /upload HTTP/1.1\r\nHost: hello.default\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
			if chunked {
				head = "POST /upload HTTP/1.1\r\nHost: hello.default\r\nTransfer-Encoding: chunked\r\n\r\n"
				body = strconv.FormatInt(int64(len(body)), 16) + "\r\n" + body + "\r\n0\r\n\r\n"
			}
			resp, closed := rawExchange(t, h, head+body)
			if resp.StatusCode() != fasthttp.StatusBadGateway {
				t.Errorf("status %d %q, want 502: the request cannot be sent again", resp.StatusCode(), resp.Body())
			}
			if tc.early && !closed {
				t.Errorf("the client connection stayed open with the rest of the body unread")
			}
			want := []string{"POST /upload " + strconv.Itoa(100<<10)}
			if tc.early { // it saw the head and what fasthttp prefetched, then hung up
				want = []string{"POST /upload unread"}
			}
			if got := l.executed(); strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("the replica executed %q, want %q (once, whole)", got, want)
			}
		})
	}
}

// TestPostNotRepeated (issue 12, item 2): a POST with a buffered body that
// reached a replica which then dropped the connection is not sent again,
// to it or to another replica: the client gets a 502.
func TestPostNotRepeated(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MaxRetries = 2 }, rev("hello", 0,
		Replica{Address: "r1:80", Ready: true}, Replica{Address: "r2:80", Ready: true}))
	l := &ledgerBackend{}
	l.slam.Store(1 << 20)
	h.backend("r1:80", true).handler = l.handle
	h.backend("r2:80", true).handler = l.handle
	code, body, _ := h.do("hello.default", func(r *fasthttp.Request) {
		r.Header.SetMethod("POST")
		r.SetBodyString("charge-card-42")
	})
	if code != fasthttp.StatusBadGateway {
		t.Errorf("status %d %q, want 502", code, body)
	}
	if got := l.executed(); len(got) != 1 {
		t.Errorf("the POST was executed %d times (%q), want once", len(got), got)
	}
}

// TestIdempotentBufferedRetried: a PUT whose body is held in memory may be
// sent again after the replica dropped the connection.
func TestIdempotentBufferedRetried(t *testing.T) {
	h := newHarness(t, nil, rev("hello", 0, Replica{Address: "r1:80", Ready: true}))
	l := &ledgerBackend{}
	l.slam.Store(1)
	h.backend("r1:80", true).handler = l.handle
	code, body, _ := h.do("hello.default", func(r *fasthttp.Request) {
		r.Header.SetMethod("PUT")
		r.SetBodyString("state-7")
	})
	if code != 200 || body != "ok 7" {
		t.Errorf("got %d %q, want 200 %q", code, body, "ok 7")
	}
}

// TestMalformedChunkIsBadRequest (issue 12, item 7): a malformed chunk size
// in the client's body is the client's fault: 400, and the connection
// closes (the rest of the body cannot be framed).
func TestMalformedChunkIsBadRequest(t *testing.T) {
	h := newHarness(t, nil, rev("hello", 0, Replica{Address: "r1:80", Ready: true}))
	h.backend("r1:80", true)
	resp, closed := rawExchange(t, h, "POST / HTTP/1.1\r\nHost: hello.default\r\nTransfer-Encoding: chunked\r\n\r\n"+
		"zz\r\nhello\r\n0\r\n\r\n")
	if resp.StatusCode() != fasthttp.StatusBadRequest {
		t.Errorf("status %d %q, want 400", resp.StatusCode(), resp.Body())
	}
	if !closed {
		t.Errorf("the connection stayed open after a malformed body")
	}
}

// TestContentLengthWithTransferEncodingCloses (RFC 9112 §6.1): a request
// with both is answered, then its connection closed.
func TestContentLengthWithTransferEncodingCloses(t *testing.T) {
	h := newHarness(t, nil, rev("hello", 0, Replica{Address: "r1:80", Ready: true}))
	h.backend("r1:80", true)
	resp, closed := rawExchange(t, h, "POST / HTTP/1.1\r\nHost: hello.default\r\nContent-Length: 5\r\n"+
		"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
	if resp.StatusCode() != 200 {
		t.Errorf("status %d %q, want 200", resp.StatusCode(), resp.Body())
	}
	if !closed || !resp.ConnectionClose() {
		t.Errorf("connection closed %v, Connection: close %v; want both", closed, resp.ConnectionClose())
	}
}

// TestPostAfterIdleClose: the replica closes idle keep-alive connections;
// a POST that would have been written on one (and could not be sent
// again) takes a fresh connection and succeeds, executed once, and the
// replica stays in rotation. Real TCP: the closed peer is seen by a peek
// at the socket (Linux). The replica closes each connection as soon as it
// goes idle.
func TestPostAfterIdleClose(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the closed-peer check is Linux only")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &ledgerBackend{}
	b := &backend{name: "tcp:80", handler: l.handle}
	b.ready.Store(true)
	b.server = &fasthttp.Server{Handler: b.serve, ConnState: closeWhenIdle}
	go func() { _ = b.server.Serve(ln) }()
	t.Cleanup(func() { _ = b.server.Shutdown() })
	h := newHarness(t, func(o *Options) {
		inner := o.Dial
		o.Dial = func(addr string) (net.Conn, error) {
			if addr == "tcp:80" {
				return net.Dial("tcp", ln.Addr().String())
			}
			return inner(addr)
		}
	}, rev("hello", 0, Replica{Address: "tcp:80", Ready: true}))
	for i := range 3 {
		code, body, _ := h.do("hello.default", func(r *fasthttp.Request) {
			r.Header.SetMethod("POST")
			r.SetBodyString("charge-" + strconv.Itoa(i))
		})
		if code != 200 {
			t.Fatalf("POST %d: %d %q", i, code, body)
		}
		h.eventually("the replica closed its idle connections", func() bool { return b.server.GetOpenConnectionsCount() == 0 })
	}
	if got, want := strings.Join(l.executed(), "|"), "POST /path 8|POST /path 8|POST /path 8"; got != want {
		t.Errorf("the replica executed %q, want %q", got, want)
	}
	if down := testutil.ToFloat64(h.a.metrics.replicaDown); down != 0 {
		t.Errorf("the replica left the rotation %v times", down)
	}
}

// closeWhenIdle is a server's ConnState hook that closes every connection
// once its response is written: a keep-alive connection closed while idle,
// without a Connection: close the client could see.
func closeWhenIdle(c net.Conn, st fasthttp.ConnState) {
	if st == fasthttp.StateIdle {
		_ = c.Close()
	}
}
