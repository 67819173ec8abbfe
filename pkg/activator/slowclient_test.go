package activator

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
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"ebb.dev/ebb/internal/testnet"
)

// tcpHarness is a harness whose activator serves on 127.0.0.1 (its
// replicas stay in memory), with short client deadlines; addr is its
// address.
func tcpHarness(t *testing.T, tweak func(*Options)) (h *harness, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h = newHarness(t, func(o *Options) {
		o.Listener = ln
		o.MaxConns = 4
		o.HeaderTimeout = 300 * time.Millisecond
		o.IdleTimeout = 300 * time.Millisecond
		if tweak != nil {
			tweak(o)
		}
	}, rev("hello", 0, Replica{Address: "r1:80", Ready: true}))
	h.backend("r1:80", true)
	return h, ln.Addr().String()
}

// roundTrip writes head on a new connection to addr and reads the answer.
func roundTrip(t *testing.T, addr, head string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", head, err)
	}
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestStalledHeadsClosed: connections that stall in their first request
// head, as many as MaxConns, are closed by the head deadline, and new
// requests are served again (before the fix they got 503 for as long as
// the stalled clients wished).
func TestStalledHeadsClosed(t *testing.T) {
	_, addr := tcpHarness(t, nil)
	var stalled []net.Conn
	for range 4 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: hello.default\r\nX-Partial: "); err != nil {
			t.Fatal(err)
		}
		stalled = append(stalled, c)
	}
	for _, c := range stalled {
		testnet.WaitClosed(t, c)
	}
	if code, body := roundTrip(t, addr, "GET / HTTP/1.1\r\nHost: hello.default\r\n\r\n"); code != 200 {
		t.Errorf("request after the stalled connections closed = %d %q, want 200", code, body)
	}
}

// TestStalledHeadDoesNotBlockOthers: while a stalled connection waits for
// its deadline, a new client is served at once.
func TestStalledHeadDoesNotBlockOthers(t *testing.T) {
	_, addr := tcpHarness(t, func(o *Options) { o.HeaderTimeout = 5 * time.Second })
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: hel")
	if code, body := roundTrip(t, addr, "GET / HTTP/1.1\r\nHost: hello.default\r\n\r\n"); code != 200 {
		t.Errorf("request beside a stalled connection = %d %q, want 200", code, body)
	}
}

// TestIdleKeepAliveClosed: a keep-alive connection with no next request is
// closed after IdleTimeout.
func TestIdleKeepAliveClosed(t *testing.T) {
	_, addr := tcpHarness(t, nil)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	testnet.IdleClosedAfterOne(t, c, "hello.default")
}

// TestSlowBodyNotCutByHeadDeadline: a body that arrives over longer than
// the head deadline, within BodyTimeout, reaches the replica whole.
func TestSlowBodyNotCutByHeadDeadline(t *testing.T) {
	h, addr := tcpHarness(t, nil)
	h.backends["r1:80"].handler = func(ctx *fasthttp.RequestCtx) { fmt.Fprintf(ctx, "got %d", len(ctx.PostBody())) }
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := strings.Repeat("x", 4000)
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: hello.default\r\nContent-Length: %d\r\n\r\n", len(body))
	for i := range 4 { // 4 x 150ms: twice the 300ms head deadline
		if _, err := io.WriteString(c, body[i*1000:(i+1)*1000]); err != nil {
			t.Fatalf("writing piece %d: %v", i, err)
		}
		time.Sleep(150 * time.Millisecond) // pacing the client, not an assertion
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(got) != "got 4000" {
		t.Errorf("slow upload = %d %q, want 200 %q", resp.StatusCode, got, "got 4000")
	}
}

// TestMalformedHeadNotLogged: a malformed request head is answered 400 and
// its contents (here an Authorization) never reach the log, at any level;
// fasthttp's per-connection messages are at Debug.
func TestMalformedHeadNotLogged(t *testing.T) {
	const secret = "TOPSECRET-credential-4711"
	core, logs := observer.New(zapcore.DebugLevel)
	_, addr := tcpHarness(t, func(o *Options) { o.Logger = zap.New(core) })
	for _, head := range []string{
		"GET / HTTP/1.1\r\nHost: hello.default\r\nAuthorization: Bearer " + secret + "\r\nno colon here\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: hello.default\r\nAuthorization: Bearer " + secret + "\r\nContent-Length: zz\r\n\r\n",
	} {
		if code, _ := roundTrip(t, addr, head); code != 400 {
			t.Errorf("answer to %q = %d, want 400", head, code)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for logs.FilterMessage("fasthttp server").Len() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // waiting for fasthttp's log call, a state
	}
	if n := logs.FilterMessage("fasthttp server").Len(); n < 2 {
		t.Errorf("fasthttp logged %d messages, want 2 (the test must see the path it guards)", n)
	}
	for _, e := range logs.All() {
		line := fmt.Sprint(e.Message, e.ContextMap())
		if strings.Contains(line, secret) {
			t.Errorf("log entry at %v holds the secret: %s", e.Level, line)
		}
		if e.Message == "fasthttp server" && e.Level > zapcore.DebugLevel {
			t.Errorf("fasthttp's message at %v, want Debug: %s", e.Level, line)
		}
	}
}
