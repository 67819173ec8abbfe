package proxycore

import (
	"bufio"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/valyala/fasthttp"
)

func TestForwardTrailers(t *testing.T) {
	tests := []struct {
		name     string
		declared string // the upstream's Trailer header ("" none)
		in       string // a chunked body with its trailer section
		want     string // what fasthttp writes after the last chunk
	}{
		{name: "no trailers", in: "5\r\nhello\r\n0\r\n\r\n", want: "\r\n"},
		{name: "announced", declared: "Grpc-Status", in: "5\r\nhello\r\n0\r\nGrpc-Status: 0\r\n\r\n",
			want: "Grpc-Status: 0\r\n\r\n"},
		{name: "not announced, two of them", in: "5\r\nhello\r\n0\r\nX-Sum: abc\r\nX-Count:  5 \r\n\r\n",
			want: "X-Sum: abc\r\nX-Count: 5\r\n\r\n"},
		{name: "forbidden and malformed fields are dropped",
			in:   "5\r\nhello\r\n0\r\nContent-Length: 9\r\nno colon\r\n folded: x\r\n: empty\r\nX-Ok: 1\r\n\r\n",
			want: "X-Ok: 1\r\n\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h fasthttp.ResponseHeader
			if tt.declared != "" {
				if err := h.SetTrailer(tt.declared); err != nil {
					t.Fatal(err)
				}
			}
			var b responseBody
			b.reset(bufio.NewReader(strings.NewReader(tt.in)), -1)
			b.forwardTrailers(&h)
			body, err := io.ReadAll(&b)
			if err != nil || string(body) != "hello" {
				t.Fatalf("body %q, %v", body, err)
			}
			if diff := cmp.Diff(tt.want, string(h.TrailerHeader())); diff != "" {
				t.Errorf("trailer section written (-want +got):\n%s", diff)
			}
		})
	}
}

// A body that is not chunked has no trailers: ForwardTrailers is a no-op.
func TestForwardTrailersNotChunked(t *testing.T) {
	var h fasthttp.ResponseHeader
	var b responseBody
	b.reset(bufio.NewReader(strings.NewReader("hello")), 5)
	b.forwardTrailers(&h)
	if _, err := io.ReadAll(&b); err != nil {
		t.Fatal(err)
	}
	if got := string(h.TrailerHeader()); got != "\r\n" {
		t.Errorf("trailer section %q, want none", got)
	}
}
