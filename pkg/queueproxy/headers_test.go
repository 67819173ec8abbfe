package queueproxy

import (
	"bufio"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/valyala/fasthttp"
)

func TestInspect(t *testing.T) {
	tests := []struct {
		name string
		head string
		want requestFacts
	}{
		{name: "plain", head: "Accept: */*\r\n", want: requestFacts{}},
		{name: "probe", head: "K-Network-Probe: queue\r\n", want: requestFacts{probe: []byte("queue")}},
		{name: "activator, forwarded", head: "k-proxy-request: activator\r\nX-Forwarded-For: 1.2.3.4\r\nx-forwarded-proto: https\r\n",
			want: requestFacts{proxy: []byte("activator"), xff: []byte("1.2.3.4"), xfp: true}},
		{name: "upgrade token in a list", head: "Connection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n", want: requestFacts{upgrade: true}},
		{name: "no upgrade token", head: "Connection: keep-alive, upgrades\r\n", want: requestFacts{}},
		{name: "hop-by-hop", head: "TE: trailers\r\n", want: requestFacts{hop: true}},
		{name: "keep-alive header", head: "Keep-Alive: timeout=5\r\n", want: requestFacts{hop: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h fasthttp.RequestHeader
			if err := h.Read(bufio.NewReader(strings.NewReader("GET / HTTP/1.1\r\nHost: x\r\n" + tt.head + "\r\n"))); err != nil {
				t.Fatal(err)
			}
			got := inspect(&h)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(requestFacts{})); diff != "" {
				t.Errorf("inspect (-want +got):\n%s", diff)
			}
		})
	}
}
