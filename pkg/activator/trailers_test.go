package activator

import (
	"bufio"
	"fmt"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/internal/testnet"
)

// HTTP/1.1 trailers of a replica's chunked response reach the client.
func TestHTTP1TrailersForwarded(t *testing.T) {
	h := newHarness(t, nil, rev("hello", 0, Replica{Address: "10.0.0.1:8012", Ready: true}))
	b := h.backend("10.0.0.1:8012", true)
	b.handler = func(ctx *fasthttp.RequestCtx) {
		if err := ctx.Response.Header.SetTrailer("X-Sum"); err != nil {
			t.Error(err)
		}
		ctx.Response.Header.Set("X-Sum", "abc123") // written after the body
		ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
			_, _ = w.WriteString("part one, ")
			_ = w.Flush()
			_, _ = w.WriteString("part two")
		})
	}
	code, body, resp := h.do("hello.default", nil)
	got := []string{strconv.Itoa(code), body, string(resp.Header.Peek("X-Sum"))}
	if diff := cmp.Diff([]string{"200", "part one, part two", "abc123"}, got); diff != "" {
		t.Errorf("status, body, trailer (-want +got):\n%s", diff)
	}
}

// The trailer fields a client sends after a chunked request body reach
// the replica, announced (Trailer header) or not, with the whole body.
func TestHTTP1RequestTrailersForwarded(t *testing.T) {
	h := newHarness(t, nil, rev("hello", 0, Replica{Address: "10.0.0.1:8012", Ready: true}))
	b := h.backend("10.0.0.1:8012", true)
	b.handler = func(ctx *fasthttp.RequestCtx) {
		fmt.Fprintf(ctx, "%s|%s|%s", ctx.Request.Body(), ctx.Request.Header.Peek("X-Checksum"), ctx.Request.Header.Peek("X-Late"))
	}
	conn, err := h.net.dial("activator:80")
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := testnet.RawExchange(t, conn, "POST /up HTTP/1.1\r\nHost: hello.default\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n"+
		"5\r\nhello\r\n7\r\n, world\r\n0\r\nX-Checksum: abc123\r\nX-Late: unannounced\r\n\r\n", "hello.default", "")
	got := []string{strconv.Itoa(resp.StatusCode()), string(resp.Body())}
	if diff := cmp.Diff([]string{"200", "hello, world|abc123|unannounced"}, got); diff != "" {
		t.Errorf("status, what the replica saw (body|announced|unannounced trailer) (-want +got):\n%s", diff)
	}
}
