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
)

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
