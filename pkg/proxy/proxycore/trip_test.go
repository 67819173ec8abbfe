package proxycore

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/internal/testnet"
)

// TestResponseShapes: every kind of answer comes through whole, and the
// upstream's connection is reused or closed as it should be.
func TestResponseShapes(t *testing.T) {
	app := startApp(t, func(ctx *fasthttp.RequestCtx) {
		switch string(ctx.Path()) {
		case "/empty":
			ctx.SetStatusCode(fasthttp.StatusNoContent)
		case "/chunked":
			ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
				for i := range 100 {
					fmt.Fprintf(w, "chunk %d\n", i)
					_ = w.Flush()
				}
			})
		case "/close":
			ctx.SetConnectionClose()
			ctx.SetBodyString("bye")
		case "/large":
			ctx.SetBodyString(strings.Repeat("L", maxTestBuffer+1))
		default:
			ctx.Response.Header.Set("X-Answer", "42")
			ctx.SetBodyString("small")
		}
	}, nil)
	p := newTestProxy(t, proxyOptions{apps: []func() (net.Conn, error){app}})
	chunked := ""
	for i := range 100 {
		chunked += fmt.Sprintf("chunk %d\n", i)
	}
	tests := []struct {
		name, method, path string
		wantCode           int
		wantBody, wantHdr  string
	}{
		{name: "small", method: "GET", path: "/", wantCode: 200, wantBody: "small", wantHdr: "42"},
		{name: "head", method: "HEAD", path: "/", wantCode: 200, wantBody: "", wantHdr: "42"},
		{name: "no content", method: "GET", path: "/empty", wantCode: 204},
		{name: "chunked", method: "GET", path: "/chunked", wantCode: 200, wantBody: chunked},
		{name: "the app closes", method: "GET", path: "/close", wantCode: 200, wantBody: "bye"},
		{name: "large streams", method: "GET", path: "/large", wantCode: 200, wantBody: strings.Repeat("L", maxTestBuffer+1)},
		{name: "after close, again", method: "GET", path: "/", wantCode: 200, wantBody: "small", wantHdr: "42"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body, resp := p.do(t, func(r *fasthttp.Request) {
				r.SetRequestURI("http://x" + tt.path)
				r.Header.SetMethod(tt.method)
			})
			if code != tt.wantCode || body != tt.wantBody || string(resp.Header.Peek("X-Answer")) != tt.wantHdr {
				t.Errorf("got %d %q X-Answer %q; want %d %q %q", code, body, resp.Header.Peek("X-Answer"), tt.wantCode, tt.wantBody, tt.wantHdr)
			}
			if resp.Header.ConnectionClose() {
				t.Error("the app's Connection: close reached the client")
			}
		})
	}
	testnet.WaitUntil(t, "every trip done", func() bool { return p.open.Load() == 0 })
}

// TestStaleConnection: a keep-alive connection the app closed while idle
// is replaced without the client noticing.
func TestStaleConnection(t *testing.T) {
	var closed atomic.Int64
	app := startApp(t, func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("ok") }, func(s *fasthttp.Server) {
		s.IdleTimeout = 20 * time.Millisecond // drops idle keep-alive connections
		s.ConnState = func(_ net.Conn, st fasthttp.ConnState) {
			if st == fasthttp.StateClosed {
				closed.Add(1)
			}
		}
	})
	p := newTestProxy(t, proxyOptions{apps: []func() (net.Conn, error){app}})
	for i := range 3 {
		if code, body, _ := p.do(t, nil); code != 200 {
			t.Fatalf("request %d: %d %q", i, code, body)
		}
		n := int64(i + 1)
		testnet.WaitUntil(t, "the app closed the idle connection", func() bool { return closed.Load() >= n })
	}
}

// TestStreamedBodyNeverSentTwice (the retry rule): a streamed body (over
// the buffer, fixed length or chunked) whose first attempt reached an app
// that then dropped the connection is never sent again, to it or another
// (once it was, truncated to what fasthttp had prefetched, and the rest of
// the client's body was parsed as new requests). When the app dropped it
// before reading the body, the client's connection closes after the 502.
func TestStreamedBodyNeverSentTwice(t *testing.T) {
	for _, tc := range []struct {
		chunked bool
		early   bool // the app drops the connection before reading the body
	}{{false, false}, {true, false}, {false, true}, {true, true}} {
		t.Run(fmt.Sprintf("chunked=%v,early=%v", tc.chunked, tc.early), func(t *testing.T) {
			l := &ledgerApp{}
			l.slam.Store(1)
			app := startApp(t, l.handle, func(s *fasthttp.Server) { s.StreamRequestBody = tc.early })
			p := newTestProxy(t, proxyOptions{retries: 1, apps: []func() (net.Conn, error){app, app}})
			body := testnet.SmugglingBody(100<<10, "x")
			head := "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
			if tc.chunked {
				head = "POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
				body = strconv.FormatInt(int64(len(body)), 16) + "\r\n" + body + "\r\n0\r\n\r\n"
			}
			resp, closed := p.rawExchange(t, head+body)
			if resp.StatusCode() != fasthttp.StatusBadGateway {
				t.Errorf("status %d %q, want 502: the request cannot be sent again", resp.StatusCode(), resp.Body())
			}
			if tc.early && !closed {
				t.Errorf("the client connection stayed open with the rest of the body unread")
			}
			want := "POST /upload " + strconv.Itoa(100<<10)
			if tc.early { // it saw the head and what fasthttp prefetched, then hung up
				want = "POST /upload unread"
			}
			if got := l.executed(); got != want {
				t.Errorf("the app executed %q, want %q (once, whole)", got, want)
			}
		})
	}
}

// TestResendRule: a POST whose body is in memory and reached an app that
// then dropped the connection is not sent again, to it or to another: 502.
// An idempotent request is, on a fresh connection: a PUT with its body in
// memory, a DELETE without one.
func TestResendRule(t *testing.T) {
	for _, tc := range []struct {
		method, body string
		want         int
		wantRuns     string
	}{
		{"POST", "charge-card-42", 502, "POST / 14"},
		{"PUT", "state-7", 200, "PUT / 7|PUT / 7"},
		{"DELETE", "", 200, "DELETE / 0|DELETE / 0"},
	} {
		t.Run(tc.method, func(t *testing.T) {
			l := &ledgerApp{}
			l.slam.Store(1)
			app := startApp(t, l.handle, nil)
			p := newTestProxy(t, proxyOptions{retries: 1, apps: []func() (net.Conn, error){app, app}})
			status, body, _ := p.do(t, func(req *fasthttp.Request) {
				req.Header.SetMethod(tc.method)
				if tc.body != "" {
					req.SetBodyString(tc.body)
				}
			})
			if status != tc.want || l.executed() != tc.wantRuns {
				t.Errorf("got %d %q, the app ran %q; want %d, %q", status, body, l.executed(), tc.want, tc.wantRuns)
			}
		})
	}
}

// TestUnreadBody: the app cannot be reached, so the client's body is
// never read: a short one is skipped and the connection carries the next
// request (net/http's rule: 256 KiB within a second), a longer one closes
// the connection after the 502. Either way none of it is parsed as a
// request.
func TestUnreadBody(t *testing.T) {
	for _, tc := range []struct {
		size       int
		wantClosed bool
	}{{100 << 10, false}, {300 << 10, true}} {
		t.Run(strconv.Itoa(tc.size), func(t *testing.T) {
			l := &ledgerApp{}
			p := newTestProxy(t, proxyOptions{apps: []func() (net.Conn, error){noApp, startApp(t, l.handle, nil)}})
			p.first = func(path []byte) int { // POST /gone to the app that cannot be reached, /after to the other
				if string(path) == "/gone" {
					return 0
				}
				return 1
			}
			body := testnet.SmugglingBody(tc.size, "x")
			resp, closed := p.rawExchange(t, "POST /gone HTTP/1.1\r\nHost: x\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
			if resp.StatusCode() != fasthttp.StatusBadGateway {
				t.Errorf("status %d %q, want 502", resp.StatusCode(), resp.Body())
			}
			if closed != tc.wantClosed {
				t.Errorf("closed %v after an unread body of %d bytes, want %v", closed, tc.size, tc.wantClosed)
			}
			if strings.Contains(l.executed(), "smuggled") {
				t.Errorf("part of the body reached the app as a request: %q", l.executed())
			}
		})
	}
}

// TestMalformedChunkIsBadRequest: a malformed chunk size in the client's
// body is the client's fault: 400, and the connection closes (the rest of
// the body cannot be framed).
func TestMalformedChunkIsBadRequest(t *testing.T) {
	l := &ledgerApp{}
	p := newTestProxy(t, proxyOptions{apps: []func() (net.Conn, error){startApp(t, l.handle, nil)}})
	resp, closed := p.rawExchange(t, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n")
	if resp.StatusCode() != fasthttp.StatusBadRequest || !closed {
		t.Errorf("got %d %q, closed %v; want 400 and the connection closed", resp.StatusCode(), resp.Body(), closed)
	}
}

// TestContentLengthWithTransferEncodingCloses (RFC 9112 §6.1): a request
// with both is answered, then its connection closed.
func TestContentLengthWithTransferEncodingCloses(t *testing.T) {
	l := &ledgerApp{}
	p := newTestProxy(t, proxyOptions{apps: []func() (net.Conn, error){startApp(t, l.handle, nil)}})
	resp, closed := p.rawExchange(t,
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
	if resp.StatusCode() != 200 || !closed || !resp.ConnectionClose() {
		t.Errorf("got %d %q, closed %v, Connection: close %v; want 200, closed, close", resp.StatusCode(), resp.Body(), closed,
			resp.ConnectionClose())
	}
}

// TestPostAfterIdleClose: the app closes idle keep-alive connections; a
// POST that would have been written on one (and lost: it may not be sent
// again) takes a fresh connection instead and succeeds, executed once.
// Real TCP: the closed peer is seen by a peek at the socket (Linux). The
// app closes each connection as soon as it goes idle (not after an idle
// timeout, which a loaded machine could hit before the first request on a
// fresh connection arrives).
func TestPostAfterIdleClose(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the closed-peer check is Linux only")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &ledgerApp{}
	var open atomic.Int64
	app := &fasthttp.Server{Handler: l.handle, Logger: quietLogger{}, ConnState: func(c net.Conn, st fasthttp.ConnState) {
		switch st {
		case fasthttp.StateNew:
			open.Add(1)
		case fasthttp.StateIdle: // closed as soon as its answer is written, without a Connection: close
			_ = c.Close()
		case fasthttp.StateClosed:
			open.Add(-1)
		}
	}}
	go func() { _ = app.Serve(ln) }()
	t.Cleanup(func() { _ = app.Shutdown() })
	p := newTestProxy(t, proxyOptions{apps: []func() (net.Conn, error){func() (net.Conn, error) {
		return net.Dial("tcp", ln.Addr().String())
	}}})
	for i := range 3 {
		status, body, _ := p.do(t, func(req *fasthttp.Request) {
			req.Header.SetMethod("POST")
			req.SetBodyString("charge-" + strconv.Itoa(i))
		})
		if status != 200 {
			t.Fatalf("POST %d: %d %q", i, status, body)
		}
		testnet.WaitUntil(t, "the app closed its idle connection", func() bool { return open.Load() == 0 })
	}
	if got, want := l.executed(), "POST / 8|POST / 8|POST / 8"; got != want {
		t.Errorf("the app executed %q, want %q", got, want)
	}
}

// HTTP/1.1 trailers of an app's chunked answer reach the client,
// announced (Trailer header) or not.
func TestResponseTrailersForwarded(t *testing.T) {
	p := newTestProxy(t, proxyOptions{tcp: true, apps: []func() (net.Conn, error){netHTTPApp(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Trailer", "X-Checksum")
		_, _ = io.WriteString(w, "part one, ")
		w.(http.Flusher).Flush() // chunked
		_, _ = io.WriteString(w, "part two")
		w.Header().Set("X-Checksum", "abc123")
		w.Header().Set(http.TrailerPrefix+"X-Late", "unannounced")
	})}})
	c, err := p.dial()
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(_ context.Context, _, _ string) (net.Conn, error) { return c, nil }}}
	resp, err := client.Get("http://x/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{"body": string(body), "X-Checksum": resp.Trailer.Get("X-Checksum"), "X-Late": resp.Trailer.Get("X-Late")}
	want := map[string]string{"body": "part one, part two", "X-Checksum": "abc123", "X-Late": "unannounced"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("body and trailers through the hop (-want +got):\n%s", diff)
	}
}

// The trailer fields a client sends after a chunked request body reach
// the app, announced (Trailer header) or not, with the whole body; one
// that must not be a trailer (framing) fails the request with 400, and
// the app never gets a complete request.
func TestRequestTrailersForwarded(t *testing.T) {
	complete := make(chan bool, 1)
	p := newTestProxy(t, proxyOptions{apps: []func() (net.Conn, error){netHTTPApp(t, func(w http.ResponseWriter, r *http.Request) {
		announced := make([]string, 0, len(r.Trailer)) // before the body: the announced names
		for k := range r.Trailer {
			announced = append(announced, k)
		}
		body, err := io.ReadAll(r.Body) // the trailers are read with the body's end
		if r.URL.Path == "/refused" {
			complete <- err == nil
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "ok %s|%s|%s|%s", body, strings.Join(announced, ","), r.Trailer.Get("X-Checksum"), r.Trailer.Get("X-Late"))
	})}})
	resp, _ := p.rawExchange(t, "POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n"+
		"5\r\nhello\r\n7\r\n, world\r\n0\r\nX-Checksum: abc123\r\nX-Late: unannounced\r\n\r\n")
	got := []string{strconv.Itoa(resp.StatusCode()), string(resp.Body())}
	if diff := cmp.Diff([]string{"200", "ok hello, world|X-Checksum|abc123|unannounced"}, got); diff != "" {
		t.Errorf("status, what the app saw (body|announced names|announced|unannounced) (-want +got):\n%s", diff)
	}

	resp, _ = p.rawExchange(t, "POST /refused HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nContent-Length: 5\r\n\r\n")
	if resp.StatusCode() != http.StatusBadRequest {
		t.Errorf("status %d for a Content-Length trailer; want 400", resp.StatusCode())
	}
	select {
	case ok := <-complete:
		if ok {
			t.Error("the app read a complete request whose trailer was refused")
		}
	case <-time.After(10 * time.Second):
		t.Error("the app never saw the request end")
	}
}

// netHTTPApp serves h with net/http on 127.0.0.1 for the test's life.
func netHTTPApp(t *testing.T, h http.HandlerFunc) func() (net.Conn, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	app := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = app.Serve(ln) }()
	t.Cleanup(func() { _ = app.Close() })
	return func() (net.Conn, error) { return net.Dial("tcp", ln.Addr().String()) }
}

// TestUpgrade: an upgrade answered 101 is a tunnel both ways, until the
// client closes it (the trip ends then); one answered otherwise is an
// ordinary exchange, and the connection stays HTTP/1.1.
func TestUpgrade(t *testing.T) {
	app := startApp(t, func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Path()) != "/ws" {
			ctx.SetBodyString("ok " + string(ctx.Path())) // /refused, and /after
			return
		}
		ctx.SetStatusCode(fasthttp.StatusSwitchingProtocols)
		ctx.Response.Header.Set("Connection", "Upgrade")
		ctx.Response.Header.Set("Upgrade", "echo")
		ctx.Hijack(func(c net.Conn) { _, _ = io.Copy(c, c) })
	}, nil)
	p := newTestProxy(t, proxyOptions{apps: []func() (net.Conn, error){app}})

	c, err := p.dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprint(c, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	br := bufio.NewReader(c)
	var resp fasthttp.Response
	resp.SkipBody = true
	if err := resp.Header.Read(br); err != nil || resp.StatusCode() != 101 || !strings.EqualFold(string(resp.Header.Peek("Upgrade")), "echo") {
		t.Fatalf("answer to the upgrade: %v, %q", err, resp.Header.Header())
	}
	for _, msg := range []string{"ping", "pong and more"} {
		fmt.Fprint(c, msg)
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(br, got); err != nil || string(got) != msg {
			t.Fatalf("echo = %q, %v; want %q", got, err, msg)
		}
	}
	_ = c.Close()
	testnet.WaitUntil(t, "the tunnel's trip done", func() bool { return p.open.Load() == 0 })

	refused, closed := p.rawExchange(t, "GET /refused HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	if refused.StatusCode() != 200 || string(refused.Body()) != "ok /refused" || closed {
		t.Errorf("upgrade refused by the app: %d %q, closed %v; want its 200, and the connection kept as HTTP/1.1",
			refused.StatusCode(), refused.Body(), closed)
	}
}
