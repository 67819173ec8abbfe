package testnet

import (
	"bufio"
	"io"
	"net"
	"net/http"
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

// TwoContentTypesRefused sends on c a GET with the Content-Type field twice
// and a GET /after pipelined behind it (both to host), and wants a 400
// naming Content-Type and the connection closed with no second answer: the
// request behind it must not run. c is closed on return.
func TwoContentTypesRefused(t testing.TB, c net.Conn, host string) {
	t.Helper()
	defer c.Close()
	if _, err := io.WriteString(c, "GET /a?x=1 HTTP/1.1\r\nHost: "+host+"\r\nContent-Type: text/a\r\nContent-Type: text/b\r\n\r\n"+
		"GET /after HTTP/1.1\r\nHost: "+host+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "Content-Type") {
		t.Errorf("got %d %q, want 400 naming Content-Type", resp.StatusCode, body)
	}
	if next, err := http.ReadResponse(br, nil); err == nil {
		t.Errorf("a second answer came (%d): the connection stayed open", next.StatusCode)
	}
}
