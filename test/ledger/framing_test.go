package ledger

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"ebb.dev/ebb/pkg/stats"
)

// TestTransferEncodingIdentityRefused: a request with Transfer-Encoding:
// identity, whose "body" is a second request, through each route: the
// client gets 400 and its connection is closed, and the app sees
// neither request. Before, the proxies answered 200 and the bytes after
// the head ran at the app as GET /smuggled-identity (fasthttp lets
// identity through and reads no body); net/http answers 501.
func TestTransferEncodingIdentityRefused(t *testing.T) {
	for _, r := range routes {
		t.Run(string(r), func(t *testing.T) {
			a := startBigApp(t)
			d := front(t, r, a.addr)
			before := a.others.Load()
			c, err := net.DialTimeout("tcp", d.addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(requestTimeout))
			smuggled := "GET /smuggled-identity HTTP/1.1\r\nHost: " + host + "\r\n\r\n"
			if _, err := io.WriteString(c, "POST /upload HTTP/1.1\r\nHost: "+host+"\r\nTransfer-Encoding: identity\r\n\r\n"+smuggled); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("reading the answer: %v", err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("status %d, want 400", resp.StatusCode)
			}
			if next, err := http.ReadResponse(br, nil); err == nil {
				t.Errorf("a second answer came (%d): the bytes after the head ran as a request", next.StatusCode)
			}
			time.Sleep(100 * time.Millisecond) // a request on its way would land
			if n := a.others.Load() - before; n != 0 {
				t.Errorf("%d requests reached the app, want none", n)
			}
		})
	}
}

// extApp counts the request bodies it read whole, and answers "ok".
type extApp struct {
	addr  string
	whole atomic.Int64
}

func startExtApp(t *testing.T) *extApp {
	t.Helper()
	ln := listen(t)
	a := &extApp{addr: ln.Addr().String()}
	s := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(stats.ProbeHeaderName) == stats.ProbeHeaderValue {
			_, _ = io.WriteString(w, stats.ProbeHeaderValue)
			return
		}
		if _, err := io.Copy(io.Discard, r.Body); err == nil && r.Method == http.MethodPost {
			a.whole.Add(1)
		}
		_, _ = io.WriteString(w, "ok")
	})}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Close() })
	return a
}

// TestChunkExtensionsBounded: a chunked body whose chunk extensions add
// up to more than net/http's budget of non-data bytes (16 KiB, plus 16
// bytes and twice the data per chunk) is refused through each route: the
// client gets 400 or a closed connection, never 200, and the app never
// reads it whole. Short extensions pass. Before, extensions of any length
// were read and dropped (64 KiB of them: 200).
func TestChunkExtensionsBounded(t *testing.T) {
	long := ";ext=" + strings.Repeat("x", 4000)
	cases := []struct {
		name  string
		body  string
		whole bool
	}{
		{name: "short extensions", body: strings.Repeat("5;a=b\r\nhello\r\n", 20) + "0\r\n\r\n", whole: true},
		{name: "20,000 one-byte chunks", body: strings.Repeat("1\r\nx\r\n", 20000) + "0\r\n\r\n", whole: true},
		{name: "64 KiB of extensions", body: strings.Repeat("1"+long+"\r\nx\r\n", 16) + "0\r\n\r\n"},
	}
	for _, r := range routes {
		for _, tc := range cases {
			t.Run(string(r)+"/"+tc.name, func(t *testing.T) {
				resp, _, whole, err := postChunked(t, r, tc.body)
				status := 0
				if err == nil {
					status = resp.StatusCode
				}
				switch {
				case tc.whole && (status != http.StatusOK || !whole):
					t.Errorf("status %d (%v), app read it whole %v; want 200 and the body at the app", status, err, whole)
				case !tc.whole && (status == http.StatusOK || whole):
					t.Errorf("status %d, app read it whole %v; want 400 or a closed connection, and no whole body at the app", status, whole)
				}
			})
		}
	}
}

// TestChunkLineBounded: one chunk size line longer than net/http's 4 KiB
// (a 5,000-byte extension), on a data chunk or on the last chunk, is
// refused through each route: 400, the connection closed, and the app
// never reads the body whole. A 4,000-byte line passes, as through
// net/http. Before, the 5,000-byte line was read and dropped (200): the
// budget of all non-data bytes cannot see one line within fasthttp's
// read buffer.
func TestChunkLineBounded(t *testing.T) {
	ext := func(n int) string { return ";e=" + strings.Repeat("x", n-3) }
	cases := []struct {
		name string
		body string
		ok   bool
	}{
		{name: "4,000-byte line", body: "5" + ext(4000) + "\r\nhello\r\n0\r\n\r\n", ok: true},
		{name: "5,000-byte line", body: "5" + ext(5000) + "\r\nhello\r\n0\r\n\r\n"},
		{name: "5,000-byte last chunk", body: "5\r\nhello\r\n0" + ext(5000) + "\r\n\r\n"},
	}
	for _, r := range routes {
		for _, tc := range cases {
			t.Run(string(r)+"/"+tc.name, func(t *testing.T) {
				resp, br, whole, err := postChunked(t, r, tc.body)
				if err != nil {
					t.Fatalf("reading the answer: %v", err)
				}
				if tc.ok {
					if resp.StatusCode != http.StatusOK || !whole {
						t.Errorf("status %d, app read it whole %v; want 200 and the body at the app", resp.StatusCode, whole)
					}
					return
				}
				if resp.StatusCode != http.StatusBadRequest || whole {
					t.Fatalf("status %d, app read it whole %v; want 400 and no whole body at the app", resp.StatusCode, whole)
				}
				if _, err := br.ReadByte(); err == nil {
					t.Error("the connection stayed open after the refusal")
				}
			})
		}
	}
}

// postChunked sends body as a chunked POST through route r to an app that
// counts the bodies it reads whole. It returns the answer (its body read;
// nil with the error when none could be read), the reader after it, and
// whether the app read the body whole, after a pause in which a body on
// its way would land. The body is written aside: the proxy may stop
// reading (and close) before it is all written.
func postChunked(t *testing.T, r route, body string) (*http.Response, *bufio.Reader, bool, error) {
	t.Helper()
	a := startExtApp(t)
	d := front(t, r, a.addr)
	c, err := net.DialTimeout("tcp", d.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(requestTimeout))
	go func() {
		_, _ = io.WriteString(c, "POST /upload HTTP/1.1\r\nHost: "+host+"\r\nTransfer-Encoding: chunked\r\n\r\n"+body)
	}()
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	time.Sleep(100 * time.Millisecond) // a body on its way would land
	return resp, br, a.whole.Load() > 0, err
}
