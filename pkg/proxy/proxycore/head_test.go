package proxycore

import (
	"testing"

	"github.com/valyala/fasthttp"
)

func TestKindOf(t *testing.T) {
	tests := []struct {
		name   string
		method string
		status int
		length int // -1 chunked, -2 until close
		want   bodyKind
	}{
		{name: "small", method: "GET", status: 200, length: 100, want: buffered},
		{name: "at the limit", method: "GET", status: 200, length: 1000, want: buffered},
		{name: "over the limit", method: "GET", status: 200, length: 1001, want: streamed},
		{name: "chunked", method: "GET", status: 200, length: -1, want: streamed},
		{name: "until close", method: "GET", status: 200, length: -2, want: streamed},
		{name: "HEAD", method: "HEAD", status: 200, length: 100, want: noBody},
		{name: "204", method: "GET", status: 204, length: 0, want: noBody},
		{name: "304", method: "GET", status: 304, length: 100, want: noBody},
		{name: "1xx", method: "GET", status: 101, length: 0, want: noBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req fasthttp.Request
			var resp fasthttp.Response
			req.Header.SetMethod(tt.method)
			resp.SetStatusCode(tt.status)
			resp.Header.SetContentLength(tt.length)
			if got := KindOf(&req, &resp, 1000); got != tt.want {
				t.Errorf("KindOf = %v, want %v", got, tt.want)
			}
		})
	}
}
