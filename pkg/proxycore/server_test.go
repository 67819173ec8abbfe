package proxycore

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/internal/testnet"
)

// slowClientProxy is a testProxy on 127.0.0.1 with short client deadlines
// and 4 connections at most, in front of an app that answers "got N" (the
// length of the body).
func slowClientProxy(t *testing.T, log fasthttp.Logger) (*testProxy, string) {
	t.Helper()
	app := startApp(t, func(ctx *fasthttp.RequestCtx) { fmt.Fprintf(ctx, "got %d", len(ctx.PostBody())) }, nil)
	p := newTestProxy(t, proxyOptions{tcp: true, apps: []func() (net.Conn, error){app}, server: func(o *ServerOptions) {
		o.MaxConns, o.HeaderTimeout, o.IdleTimeout = 4, 300*time.Millisecond, 300*time.Millisecond
		if log != nil {
			o.Logger = log
		}
	}})
	// The listener's address, not a dial's: a connection dialled and
	// closed here could still count against MaxConns when the test's
	// stalled connections arrive.
	return p, p.ln.Addr().String()
}

// dialTCP connects to addr; the connection closes when the test ends.
func dialTCP(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roundTrip writes head on a new connection to addr and reads the answer.
func roundTrip(t *testing.T, addr, head string) (int, string) {
	t.Helper()
	c := dialTCP(t, addr)
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", head, err)
	}
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestStalledHeadsClosed: connections that stall in their first request
// head, as many as the server serves at once, are closed by the head
// deadline, and new requests are served again (before, they got 503 for
// as long as the stalled clients wished); one stalled connection delays
// nobody meanwhile.
func TestStalledHeadsClosed(t *testing.T) {
	_, addr := slowClientProxy(t, nil)
	var stalled []net.Conn
	for range 3 {
		c := dialTCP(t, addr)
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s"); err != nil {
			t.Fatal(err)
		}
		stalled = append(stalled, c)
	}
	if code, body := roundTrip(t, addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); code != 200 {
		t.Errorf("request beside the stalled connections = %d %q, want 200", code, body)
	}
	c := dialTCP(t, addr)
	_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nX-Partial: ")
	for _, c := range append(stalled, c) {
		testnet.WaitClosed(t, c)
	}
	if code, body := roundTrip(t, addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); code != 200 {
		t.Errorf("request after the stalled connections closed = %d %q, want 200", code, body)
	}
}

// TestIdleKeepAliveClosed: a keep-alive connection with no next request is
// closed after the idle timeout.
func TestIdleKeepAliveClosed(t *testing.T) {
	_, addr := slowClientProxy(t, nil)
	testnet.IdleClosedAfterOne(t, dialTCP(t, addr), "x")
}

// TestSlowBodyNotCutByHeadDeadline: a body that arrives over longer than
// the head deadline, within the body's, reaches the app whole.
func TestSlowBodyNotCutByHeadDeadline(t *testing.T) {
	_, addr := slowClientProxy(t, nil)
	c := dialTCP(t, addr)
	body := strings.Repeat("x", 4000) // streamed: over the proxy's buffer
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", len(body))
	for i := range 4 { // 4 x 150ms: twice the 300ms head deadline
		if _, err := io.WriteString(c, body[i*1000:(i+1)*1000]); err != nil {
			t.Fatalf("writing piece %d: %v", i, err)
		}
		time.Sleep(150 * time.Millisecond) // pacing the client, not an assertion
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(got) != "got 4000" {
		t.Errorf("slow upload = %d %q, want 200 %q", resp.StatusCode, got, "got 4000")
	}
}

// TestMalformedHeadNotLogged: a malformed request head is answered 400
// and its contents (here an Authorization) never reach the server's
// logger, so no proxy can log them.
func TestMalformedHeadNotLogged(t *testing.T) {
	const secret = "TOPSECRET-credential-4711"
	log := &recordingLogger{}
	_, addr := slowClientProxy(t, log)
	for _, head := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + secret + "\r\nno colon here\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + secret + "\r\nContent-Length: zz\r\n\r\n",
	} {
		if code, _ := roundTrip(t, addr, head); code != 400 {
			t.Errorf("answer to %q = %d, want 400", head, code)
		}
	}
	waitUntil(t, "fasthttp's two messages (the test must see the path it guards)", func() bool { return len(log.all()) >= 2 })
	for _, line := range log.all() {
		if strings.Contains(line, secret) {
			t.Errorf("a log line holds the secret: %s", line)
		}
	}
}

// TestAbsoluteFormTarget: an absolute-form target is taken only with the
// Host header's host; others, the asterisk form and CONNECT get 400
// before anything else runs (an h2c upgrade included).
func TestAbsoluteFormTarget(t *testing.T) {
	l := &ledgerApp{}
	p := newTestProxy(t, proxyOptions{apps: []func() (net.Conn, error){startApp(t, l.handle, nil)}})
	for _, tc := range []struct {
		head string
		want int
	}{
		{"GET http://x/a HTTP/1.1\r\nHost: x\r\n\r\n", 200},
		{"GET http://X/a HTTP/1.1\r\nHost: x\r\n\r\n", 200},
		{"GET http://other/a HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"GET http://other/a HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABk\r\n\r\n", 400},
		{"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n", 400},
	} {
		resp, _ := p.rawExchange(t, tc.head)
		if resp.StatusCode() != tc.want {
			t.Errorf("%q: %d %q, want %d", tc.head, resp.StatusCode(), resp.Body(), tc.want)
		}
	}
	if got := l.executed(); got != "GET /a 0|GET /a 0" {
		t.Errorf("the app executed %q, want the two agreeing targets", got)
	}
}
