package testnet

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// RawExchange writes raw (a request, written as a client would, whatever
// its framing) on c and reads one response; then, unless the proxy closed
// the connection, it sends a second request (GET /after to host) and reads
// its answer: whatever of the first request's body the proxy left unread
// would come first. closed says the proxy closed the connection after the
// first response. The answer to GET /after must be a 200 whose body starts
// with afterBody. c is closed on return.
func RawExchange(t testing.TB, c net.Conn, raw, host, afterBody string) (resp *fasthttp.Response, closed bool) {
	t.Helper()
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { // may block on a body the proxy never reads
		if _, err := io.WriteString(c, raw); err == nil {
			_, _ = io.WriteString(c, "GET /after HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
		}
	}()
	br := bufio.NewReader(c)
	resp = &fasthttp.Response{}
	if err := resp.Read(br); err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	if resp.ConnectionClose() {
		var more fasthttp.Response
		if err := more.Read(br); err == nil {
			t.Errorf("a response (%d %q) followed Connection: close", more.StatusCode(), more.Body())
		}
		return resp, true
	}
	var next fasthttp.Response
	if err := next.Read(br); err != nil {
		t.Fatalf("reading the answer to the request after: %v", err)
	}
	if next.StatusCode() != fasthttp.StatusOK || !strings.HasPrefix(string(next.Body()), afterBody) {
		t.Errorf("the request after got %d %q: part of the first body was parsed as a request", next.StatusCode(), next.Body())
	}
	return resp, false
}

// SmugglingBody is a body of n bytes made of requests to host, as a client
// trying to smuggle one would send: any of it parsed as a request is a bug.
func SmugglingBody(n int, host string) string {
	req := "GET /smuggled HTTP/1.1\r\nHost: " + host + "\r\n\r\n"
	return strings.Repeat(req, n/len(req)+1)[:n]
}
