package ledger

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// A body is whole only when its framing says so. A client that stops
// sending (FIN or RST) before its body's end, as its framing sets it (the
// chunked coding's last chunk and trailer section, or the Content-Length),
// must leave the app with a read error, never a clean short body, through
// each route. Before, a chunked body cut exactly between two chunks (or
// in its trailer section) reached the app as a whole shorter one through
// the queue-proxy and the activator, and through the chain in every
// variant: the activator re-chunked what it had and closed on a boundary,
// which the queue-proxy took for the end.

// cutCase is one way to stop a body early: what is sent after the head
// and the first chunk (which the app must see arrive), then the cut.
type cutCase struct {
	name    string
	chunked bool   // else Content-Length: 300000 (a body the proxies stream)
	rest    string // sent after the head and its first piece, before the cut
}

var cutCases = []cutCase{
	{name: "boundary", chunked: true, rest: "3\r\nabc\r\n"},
	{name: "mid-chunk", chunked: true, rest: "a\r\nabc"},
	{name: "mid-size-line", chunked: true, rest: "1"},
	{name: "before-crlf", chunked: true, rest: "3\r\nabc"},
	{name: "in-trailers", chunked: true, rest: "0\r\n"},
	{name: "trailer-field", chunked: true, rest: "0\r\nX-T: 1\r\n"},
	{name: "boundary-256k", chunked: true, rest: strings.Repeat("4000\r\n"+strings.Repeat("z", 0x4000)+"\r\n", 16)},
	{name: "content-length", rest: "abc"},
}

// TestWholeBodyThenFIN: the control of the cut cases. A chunked body
// whose last chunk and trailer section arrive just before the client's
// FIN (it half-closes after sending, as some clients do) is whole: the
// app executes it and the client gets its answer, through each route.
func TestWholeBodyThenFIN(t *testing.T) {
	eachRoute(t, faults{}, func(t *testing.T, _ route, a *app, d door) {
		for i, tail := range []string{"0\r\n\r\n", "0\r\nX-T: 1\r\n\r\n", "3\r\nabc\r\n0\r\n\r\n"} {
			id := fmt.Sprintf("whole-fin-%d", i)
			c, err := net.DialTimeout("tcp", d.addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			_ = c.SetDeadline(time.Now().Add(requestTimeout))
			head := fmt.Sprintf("POST /ledger/%s HTTP/1.1\r\nHost: %s\r\n%s: %s\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
				id, host, idHeader, id)
			if _, err := io.WriteString(c, head); err != nil {
				t.Fatal(err)
			}
			waitUntil(func() bool { heads, _ := a.seen(id); return heads > 0 })
			if _, err := io.WriteString(c, tail); err != nil {
				t.Fatal(err)
			}
			_ = c.(*net.TCPConn).CloseWrite()
			answer, _ := io.ReadAll(c)
			c.Close()
			execs := executed(a, id)
			if len(execs) != 1 || !strings.HasPrefix(string(answer), "HTTP/1.1 200") {
				t.Errorf("%s: executions %+v, answer %q; want one execution and a 200", id, execs, answer)
			}
		}
	})
}

// TestCutBodyIsNeverWhole sends each cut case, closed by FIN and by RST,
// through each route: the app sees the head, then a read error (counted
// as a cut body), and executes nothing.
func TestCutBodyIsNeverWhole(t *testing.T) {
	eachRoute(t, faults{}, func(t *testing.T, _ route, a *app, d door) {
		for _, cc := range cutCases {
			for _, rst := range []bool{false, true} {
				id := "cut-" + cc.name + "-fin"
				if rst {
					id = "cut-" + cc.name + "-rst"
				}
				sendCut(t, d.addr, a, id, cc, rst)
				waitUntil(func() bool { _, cut := a.seen(id); return cut > 0 || len(executed(a, id)) > 0 })
				heads, cut := a.seen(id)
				if execs := executed(a, id); len(execs) > 0 || cut != 1 || heads != 1 {
					t.Errorf("%s: the app saw %d heads, %d cut bodies, executed %+v; want one head, its body cut, nothing executed",
						id, heads, cut, execs)
				}
			}
		}
	})
}

// sendCut sends the head of id and its first piece of body, waits until
// the app has the head (so the cut is not lost in a proxy's buffer), sends
// cc.rest and closes: a FIN (then reads whatever answer comes), or a RST.
func sendCut(t *testing.T, addr string, a *app, id string, cc cutCase, rst bool) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(requestTimeout))
	head := fmt.Sprintf("POST /ledger/%s HTTP/1.1\r\nHost: %s\r\n%s: %s\r\n", id, host, idHeader, id)
	first := "5\r\nhello\r\n"
	if cc.chunked {
		head += "Transfer-Encoding: chunked\r\n\r\n"
	} else {
		head += "Content-Length: 300000\r\n\r\n"
		first = strings.Repeat("h", 100<<10) // past what the proxies read before forwarding
	}
	if _, err := io.WriteString(c, head+first); err != nil {
		t.Fatal(err)
	}
	waitUntil(func() bool { heads, _ := a.seen(id); return heads > 0 })
	if _, err := io.WriteString(c, cc.rest); err != nil {
		t.Fatal(err)
	}
	tc := c.(*net.TCPConn)
	if rst {
		_ = tc.SetLinger(0) // Close sends a RST
		return
	}
	_ = tc.CloseWrite()
	_, _ = io.Copy(io.Discard, c) // the proxy's answer, if any, until it closes
}
