package ledger

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
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
