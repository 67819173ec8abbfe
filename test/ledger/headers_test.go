package ledger

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"ebb.dev/ebb/internal/testnet"
)

// exchangeRaw writes raw (one or more requests) on a new connection to
// addr and reads n answers; it returns their statuses and bodies.
func exchangeRaw(t *testing.T, addr, raw string, n int) (statuses []int, bodies []string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(requestTimeout))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for i := range n {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("answer %d's body: %v", i, err)
		}
		statuses, bodies = append(statuses, resp.StatusCode), append(bodies, string(b))
	}
	return statuses, bodies
}

// eachRoute runs f, in parallel, for each route in front of a ledger app
// with the faults given.
func eachRoute(t *testing.T, f faults, run func(t *testing.T, r route, a *app, d door)) {
	for _, r := range routes {
		t.Run(string(r), func(t *testing.T) {
			t.Parallel()
			a := startApp(t, f)
			run(t, r, a, front(t, r, a.addr))
		})
	}
}

// executed returns the app's executions of id.
func executed(a *app, id string) []execution {
	var out []execution
	for _, e := range a.ledger() {
		if e.ID == id {
			out = append(out, e)
		}
	}
	return out
}

// TestRefusedUpgradeStaysHTTP: an upgrade request the app answers 200 (not
// 101) is an ordinary exchange, and the client's connection stays
// HTTP/1.1: the request pipelined behind it is parsed and proxied as a
// request (the proxy adds its X-Forwarded-For), through each route.
// Before, the activator spliced the connection to the replica on any
// answer, and every later request on it went through raw: unrouted,
// uncounted, without X-Forwarded-For.
func TestRefusedUpgradeStaysHTTP(t *testing.T) {
	eachRoute(t, faults{}, func(t *testing.T, _ route, a *app, d door) {
		raw := "GET /ledger/up-1 HTTP/1.1\r\nHost: " + host + "\r\n" + idHeader + ": up-1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n" +
			"GET /ledger/up-2 HTTP/1.1\r\nHost: " + host + "\r\n" + idHeader + ": up-2\r\n\r\n"
		statuses, bodies := exchangeRaw(t, d.addr, raw, 2)
		if statuses[0] != 200 || bodies[0] != "ok up-1" || statuses[1] != 200 || bodies[1] != "ok up-2" {
			t.Fatalf("answers %v %q, want 200 \"ok up-1\" then 200 \"ok up-2\"", statuses, bodies)
		}
		for _, id := range []string{"up-1", "up-2"} {
			execs := executed(a, id)
			if len(execs) != 1 || len(execs[0].XFF) != 1 || !strings.HasSuffix(execs[0].XFF[0], "127.0.0.1") {
				t.Errorf("%s: executions %+v, want one, with the X-Forwarded-For the proxy adds", id, execs)
			}
		}
	})
}

// TestTwoForwardedForLines: a client's X-Forwarded-For in two lines
// reaches the app as one line, the client appended once at its end,
// through each route. Before, the proxies appended to the first line only
// and passed the second on, which readers that take the last line (most
// do) read as the whole list: the real client was lost.
func TestTwoForwardedForLines(t *testing.T) {
	want := map[route]string{
		viaQueueProxy: "2.2.2.2, 3.3.3.3, 127.0.0.1",
		viaActivator:  "2.2.2.2, 3.3.3.3, 127.0.0.1",
		viaChain:      "2.2.2.2, 3.3.3.3, 127.0.0.1, 127.0.0.1",
	}
	eachRoute(t, faults{}, func(t *testing.T, r route, a *app, d door) {
		statuses, _ := exchangeRaw(t, d.addr, "GET /ledger/xff HTTP/1.1\r\nHost: "+host+"\r\n"+idHeader+": xff\r\n"+
			"X-Forwarded-For: 2.2.2.2\r\nX-Forwarded-For: 3.3.3.3\r\n\r\n", 1)
		execs := executed(a, "xff")
		if statuses[0] != 200 || len(execs) != 1 {
			t.Fatalf("status %d, %d executions; want 200, one", statuses[0], len(execs))
		}
		if got := execs[0].XFF; len(got) != 1 || got[0] != want[r] {
			t.Errorf("X-Forwarded-For at the app: %q, want one line %q", got, want[r])
		}
	})
}

// TestConnectionNamedFields (RFC 9110 §7.6.1): the fields a client's
// Connection names, and Proxy-Authorization, never reach the app; a
// "close" token among others closes the client's connection after the
// answer; the fields the app's Connection names, and Proxy-Authenticate,
// never reach the client. Through each route.
func TestConnectionNamedFields(t *testing.T) {
	appFields := "Connection: X-App-Private\r\nX-App-Private: p\r\nProxy-Authenticate: Basic\r\n"
	eachRoute(t, faults{appFields: appFields}, func(t *testing.T, _ route, a *app, d door) {
		c, err := net.DialTimeout("tcp", d.addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(requestTimeout))
		_, _ = io.WriteString(c, "GET /ledger/conn HTTP/1.1\r\nHost: "+host+"\r\n"+idHeader+": conn\r\n"+
			"Connection: close, X-Secret-Thing\r\nX-Secret-Thing: s\r\nProxy-Authorization: Basic eA==\r\n\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("X-App-Private") != "" || resp.Header.Get("Proxy-Authenticate") != "" {
			t.Errorf("answer %d %v: want 200 without X-App-Private and Proxy-Authenticate", resp.StatusCode, resp.Header)
		}
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("after the answer to Connection: close, X-Secret-Thing: read %v, want the connection closed", err)
		}
		execs := executed(a, "conn")
		if len(execs) != 1 {
			t.Fatalf("%d executions, want one", len(execs))
		}
		for _, name := range []string{"X-Secret-Thing", "Proxy-Authorization", "Connection"} {
			if v := execs[0].Header.Values(name); len(v) > 0 && !(name == "Connection" && v[0] == "close") {
				t.Errorf("the app got %s: %q", name, v)
			}
		}
	})
}

// TestHugeHeadersRefused: HTTP/2's header limit is HTTP/1.1's
// (proxycore.MaxRequestHeadBytes, 8 KiB), through each route, and no such
// request reaches the app. Before, HTTP/2 had none: 2 connections x 100
// streams x 500 KiB of headers took the activator from 24 to 170 MB.
//   - HTTP/1.1, 9 KiB of fields: 431.
//   - HTTP/2, 12 KiB of fields: 431.
//   - HTTP/2, 500 KiB (in frames of 16 KiB): 431 too, and the
//     connection ends gracefully (GOAWAY NO_ERROR naming that stream as
//     the last taken). The rest of the block is read and dropped, not
//     decoded (pkg/proxy/h2c's header-block guard): no memory is taken.
func TestHugeHeadersRefused(t *testing.T) {
	big := strings.Repeat("x", 9<<10)
	// fieldsOf returns n fields of 1 KiB each, as name-value pairs.
	fieldsOf := func(id string, n int) []string {
		f := []string{strings.ToLower(idHeader), id}
		for i := range n {
			f = append(f, fmt.Sprintf("x-f-%d", i), big[:1<<10])
		}
		return f
	}
	eachRoute(t, faults{}, func(t *testing.T, _ route, a *app, d door) {
		statuses, _ := exchangeRaw(t, d.addr, "GET /ledger/huge-h1 HTTP/1.1\r\nHost: "+host+"\r\n"+idHeader+": huge-h1\r\n"+
			"X-Big: "+big+"\r\n\r\n", 1)
		if statuses[0] != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("HTTP/1.1 request with 9 KiB of fields: %d, want 431", statuses[0])
		}

		c := testnet.DialH2(t, d.addr)
		c.Request(t, 1, "GET", host, "/ledger/big-h2", true, fieldsOf("big-h2", 12)...)
		got, ok := c.Wait(requestTimeout, func(s map[uint32]testnet.H2Stream, ended bool) bool { return s[1].Ended || ended })
		if !ok || got[1].Status != "431" {
			t.Errorf("HTTP/2 stream with 12 KiB of fields: %+v, want 431", got[1])
		}

		huge := testnet.DialH2(t, d.addr)
		huge.Request(t, 1, "GET", host, "/ledger/huge-h2", true, fieldsOf("huge-h2", 500)...)
		got, ended := huge.Wait(requestTimeout, func(_ map[uint32]testnet.H2Stream, ended bool) bool { return ended })
		if got[1].Status != "431" {
			t.Errorf("HTTP/2 stream with 500 KiB of fields: %+v, want 431", got[1])
		}
		if code, last, sent := huge.GoAway(); !ended || !sent || code != http2.ErrCodeNo || last != 1 {
			t.Errorf("HTTP/2 stream with 500 KiB of fields: connection ended %v, GOAWAY %v %v (last stream %d); want GOAWAY NO_ERROR, 1",
				ended, sent, code, last)
		}
		if n := len(executed(a, "huge-h1")) + len(executed(a, "big-h2")) + len(executed(a, "huge-h2")); n != 0 {
			t.Errorf("the app executed %d of the requests with huge headers", n)
		}
	})
}

// TestEmptyContinuationFloodClosed: one HTTP/2 connection that sends a
// HEADERS frame without END_HEADERS and then empty CONTINUATION frames
// (up to 20 million, 180 MB) is closed by each proxy after a bounded
// number of them, and nothing reaches the app. Before, neither proxy
// closed it, and their memory grew by hundreds of MB.
func TestEmptyContinuationFloodClosed(t *testing.T) {
	eachRoute(t, faults{}, func(t *testing.T, _ route, a *app, d door) {
		c, err := net.DialTimeout("tcp", d.addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Minute))
		go func() { _, _ = io.Copy(io.Discard, c) }()
		fr := http2.NewFramer(c, c)
		_, _ = io.WriteString(c, http2.ClientPreface)
		_ = fr.WriteSettings()
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0x82}}); err != nil {
			t.Fatal(err)
		}
		empty := []byte{0, 0, 0, byte(http2.FrameContinuation), 0, 0, 0, 0, 1}
		batch := bytes.Repeat(empty, 1<<12)
		const limit = 20_000_000
		sent := 0
		for ; sent < limit; sent += 1 << 12 {
			if _, err := c.Write(batch); err != nil {
				break
			}
		}
		if sent >= limit {
			t.Fatalf("the proxy took %d empty CONTINUATION frames without closing the connection", sent)
		}
		if heads, _ := a.seen(""); heads != 0 {
			t.Errorf("%d requests reached the app", heads)
		}
		t.Logf("connection closed after about %d empty CONTINUATION frames", sent)
	})
}

// TestTwoContentTypesRefused: a request with the Content-Type field twice
// is answered 400 naming the field and reaches no app, through each
// route, in HTTP/1.1 (its connection closed: the request pipelined behind
// it is never read) and in HTTP/2. Before, the app behind every route got
// the HTTP/1.1 request with the last value only (fasthttp keeps one
// content type), while a reader of the first value in front (net/http's
// Header.Get) saw the other; the HTTP/2 stream reached it with both.
func TestTwoContentTypesRefused(t *testing.T) {
	eachRoute(t, faults{}, func(t *testing.T, _ route, a *app, d door) {
		c, err := net.DialTimeout("tcp", d.addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(requestTimeout))
		if _, err := io.WriteString(c, "GET /ledger/ct-h1?x=1 HTTP/1.1\r\nHost: "+host+"\r\n"+idHeader+": ct-h1\r\n"+
			"Content-Type: text/a\r\nContent-Type: text/b\r\n\r\n"+
			"GET /ledger/ct-after HTTP/1.1\r\nHost: "+host+"\r\n"+idHeader+": ct-after\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !bytes.Contains(body, []byte("Content-Type")) {
			t.Errorf("HTTP/1.1 answer %d %q, want 400 naming Content-Type", resp.StatusCode, body)
		}
		if next, err := http.ReadResponse(br, nil); err == nil {
			t.Errorf("a second answer came (%d): the connection stayed open after the refusal", next.StatusCode)
		}

		h2 := testnet.DialH2(t, d.addr)
		h2.Request(t, 1, "GET", host, "/ledger/ct-h2", true, strings.ToLower(idHeader), "ct-h2",
			"content-type", "text/a", "content-type", "text/b")
		got, ok := h2.Wait(requestTimeout, func(s map[uint32]testnet.H2Stream, ended bool) bool { return s[1].Ended || ended })
		if !ok || got[1].Status != "400" {
			t.Errorf("HTTP/2 stream with two content-type fields: %+v, want 400", got[1])
		}
		time.Sleep(100 * time.Millisecond) // a request on its way would land
		for _, id := range []string{"ct-h1", "ct-after", "ct-h2"} {
			if n := len(executed(a, id)); n != 0 {
				t.Errorf("the app executed %s %d times, want none", id, n)
			}
		}
	})
}
