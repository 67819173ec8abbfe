package activator

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"
)

// TestResponseShapes: every kind of response the replica can give comes
// through whole, and the replica's connection is reused or closed as it
// should be.
func TestResponseShapes(t *testing.T) {
	h := newHarness(t, nil, rev("hello", 0, Replica{Address: "r1:80", Ready: true}))
	b := h.backend("r1:80", true)
	b.handler = func(ctx *fasthttp.RequestCtx) {
		switch string(ctx.Path()) {
		case "/empty":
			ctx.SetStatusCode(fasthttp.StatusNoContent)
		case "/chunked":
			ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
				for i := range 100 {
					fmt.Fprintf(w, "chunk %d\n", i)
					w.Flush()
				}
			})
		case "/close":
			ctx.SetConnectionClose()
			ctx.SetBodyString("bye")
		case "/large":
			ctx.SetBodyString(strings.Repeat("L", maxBufferedResponse+1))
		default:
			ctx.Response.Header.Set("X-Answer", "42")
			ctx.SetBodyString("small")
		}
	}
	chunked := ""
	for i := range 100 {
		chunked += fmt.Sprintf("chunk %d\n", i)
	}
	tests := []struct {
		name, method, path string
		wantCode           int
		wantBody, wantHdr  string
	}{
		{name: "small", method: "GET", path: "/", wantCode: 200, wantBody: "small", wantHdr: "42"},
		{name: "head", method: "HEAD", path: "/", wantCode: 200, wantBody: "", wantHdr: "42"},
		{name: "no content", method: "GET", path: "/empty", wantCode: 204},
		{name: "chunked", method: "GET", path: "/chunked", wantCode: 200, wantBody: chunked},
		{name: "replica closes", method: "GET", path: "/close", wantCode: 200, wantBody: "bye"},
		{name: "large streams", method: "GET", path: "/large", wantCode: 200, wantBody: strings.Repeat("L", maxBufferedResponse+1)},
		{name: "after close, again", method: "GET", path: "/", wantCode: 200, wantBody: "small", wantHdr: "42"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, resp := fasthttp.AcquireRequest(), &fasthttp.Response{}
			defer fasthttp.ReleaseRequest(req)
			req.SetRequestURI("http://hello.default" + tt.path)
			req.Header.SetMethod(tt.method)
			resp.SkipBody = tt.method == "HEAD"
			if err := h.client.Do(req, resp); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode() != tt.wantCode || string(resp.Body()) != tt.wantBody || string(resp.Header.Peek("X-Answer")) != tt.wantHdr {
				t.Errorf("got %d %q X-Answer %q; want %d %q %q", resp.StatusCode(), resp.Body(), resp.Header.Peek("X-Answer"),
					tt.wantCode, tt.wantBody, tt.wantHdr)
			}
			if resp.Header.ConnectionClose() {
				t.Error("the replica's Connection: close reached the client")
			}
		})
	}
	h.eventually("all requests finished", func() bool { return h.a.open.Load() == 0 })
}

// TestStaleConnection: a keep-alive connection the replica closed while
// idle is replaced without the client noticing or the replica leaving the
// rotation.
func TestStaleConnection(t *testing.T) {
	h := newHarness(t, nil, rev("hello", 0, Replica{Address: "r1:80", Ready: true}))
	var closed atomic.Int64
	h.backendWith("r1:80", true, func(s *fasthttp.Server) {
		s.IdleTimeout = 20 * time.Millisecond // drops idle keep-alive connections
		s.ConnState = func(_ net.Conn, st fasthttp.ConnState) {
			if st == fasthttp.StateClosed {
				closed.Add(1)
			}
		}
	})
	for i := range 3 {
		if code, body, _ := h.do("hello.default", nil); code != 200 {
			t.Fatalf("request %d: %d %q", i, code, body)
		}
		n := int64(i + 1)
		h.eventually("the replica closed the idle connection", func() bool { return closed.Load() >= n })
	}
	if down := testutil.ToFloat64(h.a.metrics.replicaDown); down != 0 {
		t.Errorf("the replica left the rotation %v times", down)
	}
}
