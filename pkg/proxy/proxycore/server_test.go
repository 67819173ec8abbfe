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
	testnet.WaitUntil(t, "fasthttp's two messages (the test must see the path it guards)", func() bool { return len(log.all()) >= 2 })
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

// TestKeeps: a deadline in force stands for the one asked for when it is
// the same, or sooner by no more than an eighth of the time left (at most
// a second); never when it is later, or none.
func TestKeeps(t *testing.T) {
	s := int64(time.Second)
	for _, tt := range []struct {
		name             string
		armed, want, now int64
		wantKeeps        bool
	}{
		{"same", 10 * s, 10 * s, 0, true},
		{"none asked, none armed", 0, 0, 0, true},
		{"none asked, one armed", 5 * s, 0, 0, false},
		{"one asked, none armed", 0, 5 * s, 0, false},
		{"later", 11 * s, 10 * s, 0, false},
		{"sooner within an eighth", 10*s - s/2, 10 * s, 6 * s, true},
		{"sooner by more than an eighth", 10*s - s/2, 10 * s, 7 * s, false},
		{"sooner within a second of a long wait", 89 * s, 90 * s, 0, true},
		{"sooner by more than a second", 88 * s, 90 * s, 0, false},
	} {
		if got := keeps(tt.armed, tt.want, time.Duration(tt.now)); got != tt.wantKeeps {
			t.Errorf("%s: keeps(%d, %d, %d) = %v, want %v", tt.name, tt.armed, tt.want, tt.now, got, tt.wantKeeps)
		}
	}
}

// heldAnswerProxy is a proxy on 127.0.0.1 whose app takes appDelay per
// request, with client timeouts far beyond the test's bounds.
func heldAnswerProxy(t *testing.T, appDelay time.Duration) string {
	t.Helper()
	app := startApp(t, func(ctx *fasthttp.RequestCtx) {
		time.Sleep(appDelay)
		fmt.Fprintf(ctx, "answer to %s", ctx.Path())
	}, nil)
	p := newTestProxy(t, proxyOptions{tcp: true, apps: []func() (net.Conn, error){app}, server: func(o *ServerOptions) {
		o.HeaderTimeout, o.IdleTimeout = 20*time.Second, 20*time.Second
	}})
	return p.ln.Addr().String()
}

// readAnswers reads n answers from br, each within limit.
func readAnswers(t *testing.T, c net.Conn, br *bufio.Reader, n int, limit time.Duration) []string {
	t.Helper()
	var got []string
	for range n {
		_ = c.SetReadDeadline(time.Now().Add(limit))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v (after %q)", len(got)+1, err, got)
		}
		b, _ := io.ReadAll(resp.Body)
		got = append(got, string(b))
	}
	return got
}

// TestHeldAnswers: answers held for the next read (HoldAnswer) reach a
// client that waits for each before its next request, and one that
// pipelines: a request sent while the one before it was with the app
// (so it may arrive before the answer's write: see answerProbe) is
// answered within a fraction of a second, not at the idle timeout.
func TestHeldAnswers(t *testing.T) {
	addr := heldAnswerProxy(t, 30*time.Millisecond)
	c := dialTCP(t, addr)
	br := bufio.NewReader(c)
	for i := range 3 {
		fmt.Fprintf(c, "GET /%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
		if got := readAnswers(t, c, br, 1, 5*time.Second); got[0] != fmt.Sprintf("answer to /%d", i) {
			t.Errorf("answer %d = %q", i, got[0])
		}
	}
	for round := range 3 {
		start := time.Now()
		fmt.Fprintf(c, "GET /a%d HTTP/1.1\r\nHost: x\r\n\r\n", round)
		time.Sleep(10 * time.Millisecond) // the first is with the app now
		fmt.Fprintf(c, "GET /b%d HTTP/1.1\r\nHost: x\r\n\r\n", round)
		got := readAnswers(t, c, br, 2, 5*time.Second)
		if want := []string{"answer to /a" + fmt.Sprint(round), "answer to /b" + fmt.Sprint(round)}; strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("pipelined answers %q, want %q", got, want)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("pipelined pair took %v", d)
		}
	}
}

// TestHeldAnswerClosed: a server that closes a connection with an answer
// held writes the answer first.
func TestHeldAnswerClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pl := WriteProgressListener(ln, time.Second)
	t.Cleanup(func() { _ = pl.Close() })
	go func() {
		c, err := pl.Accept()
		if err != nil {
			return
		}
		c.(*progressConn).answer.next = true
		_, _ = io.WriteString(c, "held")
		_ = c.Close()
	}()
	c := dialTCP(t, ln.Addr().String())
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := io.ReadAll(c); string(got) != "held" || err != nil {
		t.Errorf("read %q, %v; want the held answer, then the end", got, err)
	}
}
