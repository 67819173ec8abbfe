package ledger

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"ebb.dev/ebb/pkg/stats"
)

// TestPipelinedFastAnswerNotHeld: two requests pipelined in one write,
// [fast, slow], through each route: the fast one's answer reaches the
// client while the app still holds the slow one, as net/http's server
// writes each answer when it is done. The app holds the slow request
// until the test has the fast answer, or slowHold: an answer that only
// comes after the slow one was let go waited for it. Before, the fast
// answer stayed in fasthttp's write buffer until the slow one was done
// (fasthttp flushes no answer while another request is buffered).
func TestPipelinedFastAnswerNotHeld(t *testing.T) {
	const slowHold = 3 * time.Second
	for _, r := range routes {
		t.Run(string(r), func(t *testing.T) {
			release := make(chan struct{})
			var heldToEnd atomic.Bool
			ln := listen(t)
			s := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get(stats.ProbeHeaderName) == stats.ProbeHeaderValue {
					_, _ = io.WriteString(w, stats.ProbeHeaderValue)
					return
				}
				if r.URL.Path == "/slow" {
					select {
					case <-release:
					case <-time.After(slowHold):
						heldToEnd.Store(true)
					}
				}
				_, _ = io.WriteString(w, r.URL.Path)
			})}
			go func() { _ = s.Serve(ln) }()
			t.Cleanup(func() { _ = s.Close() })
			d := front(t, r, ln.Addr().String())
			c, err := net.DialTimeout("tcp", d.addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(requestTimeout))
			req := func(path string) string { return "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n" }
			if _, err := io.WriteString(c, req("/fast")+req("/slow")); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(c)
			for i, want := range []string{"/fast", "/slow"} {
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					close(release)
					t.Fatalf("answer %d: %v", i, err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if i == 0 {
					if heldToEnd.Load() {
						t.Errorf("the fast answer came only after the slow request was held %v", slowHold)
					}
					close(release)
				}
				if resp.StatusCode != http.StatusOK || string(body) != want {
					t.Errorf("answer %d: %d %q, want 200 %q", i, resp.StatusCode, body, want)
				}
			}
		})
	}
}
