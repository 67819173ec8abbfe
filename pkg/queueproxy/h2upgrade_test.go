package queueproxy

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/internal/testnet"
	"ebb.dev/ebb/pkg/proxy/h2c"
)

// An HTTP/1.1 request with "Upgrade: h2c" is answered 101, then served as
// stream 1 of an HTTP/2 connection: forwarded h2c to the app, counted as
// one request.
func TestH2CUpgrade(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	app := h2c.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Proto+" "+r.Method+" "+r.Host+" "+r.RequestURI+" "+r.Header.Get("X-Test"))
	}), h2c.ServerOptions{HeaderTimeout: 5 * time.Second, IdleTimeout: 5 * time.Second})
	go func() { _ = app.Serve(ln) }()
	t.Cleanup(func() { _ = app.Close() })
	r := runProxy(t, ln.Addr().(*net.TCPAddr).Port, nil)

	c, err := net.DialTimeout("tcp", r.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	status, body := testnet.H2CUpgrade(t, c, "GET /up?x=1 HTTP/1.1\r\nHost: example.test\r\nX-Test: kept\r\n"+
		"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABk\r\n\r\n")
	if diff := cmp.Diff([]string{"200", "HTTP/2.0 GET example.test /up?x=1 kept"}, []string{status, body}); diff != "" {
		t.Errorf("stream 1 (-want +got):\n%s", diff)
	}
	waitUntil(t, func() bool { return r.q.proxy.acct.InFlight() == 0 })
	if got := finishedRequests(t, r.q); got != 1 {
		t.Errorf("requests finished = %d, want 1 (the upgrade request is stream 1, counted once)", got)
	}
}
