package queueproxy

import (
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"
	"go.uber.org/zap"

	"ebb.dev/ebb/internal/testnet"
)

// ledgerApp records what the app executed; the first `slam` requests are
// dropped as soon as their head is read (the app crashed, or closed the
// connection mid-body), the others echo their body's length.
type ledgerApp struct {
	mu   sync.Mutex
	seen []string
	slam atomic.Int64
}

func (l *ledgerApp) handle(ctx *fasthttp.RequestCtx) {
	if l.slam.Add(-1) >= 0 {
		l.record(ctx, "unread")
		ctx.HijackSetNoResponse(true)
		ctx.Hijack(func(c net.Conn) { c.Close() })
		return
	}
	n := strconv.Itoa(len(ctx.Request.Body()))
	l.record(ctx, n)
	ctx.SetBodyString("ok " + n)
}

func (l *ledgerApp) record(ctx *fasthttp.RequestCtx, n string) {
	if p := string(ctx.Path()); p != "/after" {
		l.mu.Lock()
		l.seen = append(l.seen, string(ctx.Method())+" "+p+" "+n)
		l.mu.Unlock()
	}
}

func (l *ledgerApp) executed() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.seen, "|")
}

// rawExchange writes raw to the queue-proxy on a new connection and reads
// one response; unless it closed the connection, it then sends GET /after
// and checks that what comes back is its answer (whatever of the first
// body was left unread would be parsed first).
func rawExchange(t *testing.T, ln *fasthttputil.InmemoryListener, raw string) (resp *fasthttp.Response, closed bool) {
	t.Helper()
	c, err := ln.Dial()
	if err != nil {
		t.Fatal(err)
	}
	return testnet.RawExchange(t, c, raw, "x", "ok")
}

// smugglingBody is a body of n bytes made of requests (testnet.SmugglingBody).
func smugglingBody(n int) string { return testnet.SmugglingBody(n, "x") }

// TestStreamedBodyCutShort (issue 12, item 1 and the retry rule): the app
// hangs up while a streamed body is on its way: the client gets 502, the
// request is not sent again, and the connection closes so the rest of the
// body is never parsed as requests.
func TestStreamedBodyCutShort(t *testing.T) {
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			l := &ledgerApp{}
			l.slam.Store(1)
			r := newRig(t, testConfig(t, nil), startApp(t, l.handle))
			ln := servingListenerT(t, r)
			body := smugglingBody(200 << 10)
			head := "PUT /upload HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
			if chunked {
				head = "PUT /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
				body = strconv.FormatInt(int64(len(body)), 16) + "\r\n" + body + "\r\n0\r\n\r\n"
			}
			resp, closed := rawExchange(t, ln, head+body)
			if resp.StatusCode() != fasthttp.StatusBadGateway || !closed {
				t.Errorf("got %d %q, closed %v; want 502 and the connection closed", resp.StatusCode(), resp.Body(), closed)
			}
			if got, want := l.executed(), "PUT /upload unread"; got != want {
				t.Errorf("the app executed %q, want %q", got, want)
			}
		})
	}
}

// TestUnreadBodyClosesConnection: the app cannot be reached, so the
// client's body is never read: 502, then the connection closes (a body
// over 256 KiB is not worth skipping: proxycore.DiscardBody).
func TestUnreadBodyClosesConnection(t *testing.T) {
	app := fasthttputil.NewInmemoryListener()
	_ = app.Close() // every dial fails
	r := newRig(t, testConfig(t, nil), app)
	ln := servingListenerT(t, r)
	body := smugglingBody(300 << 10)
	resp, closed := rawExchange(t, ln, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
	if resp.StatusCode() != fasthttp.StatusBadGateway || !closed {
		t.Errorf("got %d %q, closed %v; want 502 and the connection closed", resp.StatusCode(), resp.Body(), closed)
	}
}

// TestMalformedChunkIsBadRequest (issue 12, item 7): 400, not 502, and the
// connection closes.
func TestMalformedChunkIsBadRequest(t *testing.T) {
	l := &ledgerApp{}
	r := newRig(t, testConfig(t, nil), startApp(t, l.handle))
	resp, closed := rawExchange(t, servingListenerT(t, r),
		"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n")
	if resp.StatusCode() != fasthttp.StatusBadRequest || !closed {
		t.Errorf("got %d %q, closed %v; want 400 and the connection closed", resp.StatusCode(), resp.Body(), closed)
	}
}

// TestContentLengthWithTransferEncodingCloses (RFC 9112 §6.1).
func TestContentLengthWithTransferEncodingCloses(t *testing.T) {
	l := &ledgerApp{}
	r := newRig(t, testConfig(t, nil), startApp(t, l.handle))
	resp, closed := rawExchange(t, servingListenerT(t, r),
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
	if resp.StatusCode() != 200 || !closed {
		t.Errorf("got %d %q, closed %v; want 200 and the connection closed", resp.StatusCode(), resp.Body(), closed)
	}
}

// TestPostNotRepeated: a POST the app read and then dropped is not sent
// again; a PUT without a body is.
func TestPostNotRepeated(t *testing.T) {
	for _, method := range []string{"POST", "PUT"} {
		t.Run(method, func(t *testing.T) {
			l := &ledgerApp{}
			l.slam.Store(1)
			r := newRig(t, testConfig(t, nil), startApp(t, l.handle))
			status, body, _ := r.do(t, func(req *fasthttp.Request) { req.Header.SetMethod(method) })
			want, wantRuns := fasthttp.StatusBadGateway, "POST / unread"
			if method == "PUT" {
				want, wantRuns = 200, "PUT / unread|PUT / 0"
			}
			if status != want || l.executed() != wantRuns {
				t.Errorf("got %d %q, app ran %q; want %d, %q", status, body, l.executed(), want, wantRuns)
			}
		})
	}
}

// TestPostAfterIdleClose: the app closes idle keep-alive connections; a
// POST that would have been written on one (and lost: it may not be sent
// again) takes a fresh connection instead and succeeds, executed once.
// Real TCP: the closed peer is seen by a peek at the socket (Linux).
// The app closes each connection as soon as it goes idle (not after an
// idle timeout, which a loaded machine could hit before the first request
// on a fresh connection arrives).
func TestPostAfterIdleClose(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the closed-peer check is Linux only")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &ledgerApp{}
	app := &fasthttp.Server{Handler: l.handle, ConnState: closeWhenIdle, Logger: quietLogger{}}
	go func() { _ = app.Serve(ln) }()
	t.Cleanup(func() { _ = app.Shutdown() })
	q, err := newQueueProxy(testConfig(t, nil), zap.NewNop(), func(string) (net.Conn, error) {
		return net.Dial("tcp", ln.Addr().String())
	})
	if err != nil {
		t.Fatal(err)
	}
	q.ready.app.Store(true)
	front := fasthttputil.NewInmemoryListener()
	go func() { _ = q.serving.Serve(front) }()
	t.Cleanup(func() { _ = q.serving.Shutdown() })
	r := &rig{q: q, client: &fasthttp.HostClient{Addr: "queue-proxy", Dial: func(string) (net.Conn, error) { return front.Dial() }}}
	for i := range 3 {
		status, body, _ := r.do(t, func(req *fasthttp.Request) {
			req.Header.SetMethod("POST")
			req.SetBodyString("charge-" + strconv.Itoa(i))
		})
		if status != 200 {
			t.Fatalf("POST %d: %d %q", i, status, body)
		}
		waitUntil(t, func() bool { return app.GetOpenConnectionsCount() == 0 }) // the app closed it while idle
	}
	if got, want := l.executed(), "POST / 8|POST / 8|POST / 8"; got != want {
		t.Errorf("the app executed %q, want %q", got, want)
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
