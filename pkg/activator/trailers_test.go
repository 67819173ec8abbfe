package activator

import (
	"bufio"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/valyala/fasthttp"
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
