package proxycore

import (
	"bufio"
	"net"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/valyala/fasthttp"
)

// requestCtx parses head (the fields after the request line, each ending
// in CRLF) as a server would, from a client at 10.0.0.9.
func requestCtx(t *testing.T, method, head string) *fasthttp.RequestCtx {
	t.Helper()
	var req fasthttp.Request
	raw := method + " /p HTTP/1.1\r\nHost: h\r\n" + head + "\r\n"
	if err := req.Header.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
		t.Fatalf("parsing %q: %v", raw, err)
	}
	ctx := &fasthttp.RequestCtx{}
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(10, 0, 0, 9), Port: 4}, nil)
	return ctx
}

// fields lists a head's fields as "Name: value", Host and framing left out.
func fields(all func(func(k, v []byte) bool)) []string {
	var out []string
	for k, v := range all {
		switch string(k) {
		case "Host", "Content-Length", "Transfer-Encoding":
			continue
		}
		out = append(out, string(k)+": "+string(v))
	}
	return out
}

func TestScan(t *testing.T) {
	tests := []struct {
		name                 string
		head                 string
		wantGot              [2]string
		wantUpgrade, wantHop bool
	}{
		{name: "plain", head: "Accept: */*\r\n"},
		{name: "wanted fields", head: "K-Network-Probe: queue\r\nK-Proxy-Request: activator\r\n",
			wantGot: [2]string{"queue", "activator"}},
		{name: "upgrade token in a list", head: "Connection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n", wantUpgrade: true,
			wantHop: true},
		{name: "upgrade token without an Upgrade field", head: "Connection: upgrade\r\n"},
		{name: "no upgrade token", head: "Connection: keep-alive, upgrades\r\nUpgrade: websocket\r\n", wantHop: true},
		{name: "hop-by-hop", head: "TE: trailers\r\n", wantHop: true},
		{name: "proxy credentials", head: "Proxy-Authorization: Basic eA==\r\n", wantHop: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := requestCtx(t, "GET", tt.head)
			r := RequestHead{Want: [2]string{"K-Network-Probe", "K-Proxy-Request"}}
			r.scan(&ctx.Request.Header)
			got := []any{string(r.Got[0]), string(r.Got[1]), r.Upgrade(), r.hop}
			if diff := cmp.Diff([]any{tt.wantGot[0], tt.wantGot[1], tt.wantUpgrade, tt.wantHop}, got); diff != "" {
				t.Errorf("got, upgrade, hop (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPrepareRequest: what the upstream gets of a client's head (RFC 9110
// §7.6.1), and whether the client's connection closes after the answer.
func TestPrepareRequest(t *testing.T) {
	fwd := []string{"X-Forwarded-For: 10.0.0.9", "X-Forwarded-Proto: http"}
	tests := []struct {
		name      string
		method    string
		head      string
		want      []string
		wantClose bool
	}{
		{name: "plain", head: "Accept: */*\r\n", want: append([]string{"Accept: */*"}, fwd...)},
		{name: "exact close", head: "Connection: close\r\n", want: fwd, wantClose: true},
		{name: "close in any case", head: "Connection: Close\r\n", want: fwd, wantClose: true},
		{name: "close among names, named fields dropped", head: "Connection: close, X-Secret-Thing\r\nX-Secret-Thing: s\r\nA: b\r\n",
			want: append([]string{"A: b"}, fwd...), wantClose: true},
		{name: "keep-alive and a name over two lines",
			head: "Connection: keep-alive\r\nConnection: X-A\r\nX-A: 1\r\nKeep-Alive: timeout=5\r\n", want: fwd},
		{name: "framing never dropped by name", method: "POST", head: "Content-Length: 3\r\nConnection: Content-Length, Host\r\n",
			want: fwd},
		{name: "proxy credentials dropped", head: "Proxy-Authorization: Basic eA==\r\nAuthorization: Bearer t\r\n",
			want: append([]string{"Authorization: Bearer t"}, fwd...)},
		{name: "TE: trailers kept, other codings dropped", head: "TE: gzip, trailers\r\n",
			want: append([]string{"Te: trailers"}, fwd...)},
		{name: "TE without trailers dropped", head: "TE: gzip\r\n", want: fwd},
		{name: "Trailer kept on a chunked request", method: "POST", head: "Transfer-Encoding: chunked\r\nTrailer: X-Sum\r\n",
			want: append([]string{"Trailer: X-Sum"}, fwd...)},
		{name: "Trailer dropped otherwise", head: "Trailer: X-Sum\r\n", want: fwd},
		{name: "upgrade kept", head: "Connection: keep-alive, Upgrade, X-B\r\nUpgrade: websocket\r\nX-B: 1\r\n",
			want: append([]string{"Upgrade: websocket", "Connection: Upgrade"}, fwd...)},
		{name: "an Upgrade field alone dropped", head: "Upgrade: websocket\r\n", want: fwd},
		{name: "one X-Forwarded-For line for all the client's",
			head: "X-Forwarded-For: 2.2.2.2\r\nX-Forwarded-For: 3.3.3.3, 4.4.4.4\r\nX-Forwarded-Proto: https\r\n",
			want: []string{"X-Forwarded-Proto: https", "X-Forwarded-For: 2.2.2.2, 3.3.3.3, 4.4.4.4, 10.0.0.9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = "GET"
			}
			ctx := requestCtx(t, method, tt.head)
			var r RequestHead
			r.scan(&ctx.Request.Header)
			closeAfter, _ := prepareRequest(ctx, &r, nil)
			got := fields(ctx.Request.Header.All())
			if diff := cmp.Diff(tt.want, got); diff != "" || closeAfter != tt.wantClose {
				t.Errorf("fields (-want +got):\n%s\nclose after = %v, want %v", diff, closeAfter, tt.wantClose)
			}
			if ctx.Request.Header.ConnectionClose() {
				t.Error("the upstream is asked to close (the client's close is for its own hop)")
			}
		})
	}
}

// TestPrepareResponse: what the client gets of an upstream's head, and
// whether the upstream's connection may be reused.
func TestPrepareResponse(t *testing.T) {
	tests := []struct {
		name     string
		head     string
		want     []string
		wantKeep bool
	}{
		{name: "plain", head: "A: b\r\n", want: []string{"A: b"}, wantKeep: true},
		{name: "exact close", head: "Connection: close\r\n", want: nil, wantKeep: false},
		{name: "close and a name", head: "Connection: Close, X-App-Private\r\nX-App-Private: p\r\nA: b\r\n", want: []string{"A: b"},
			wantKeep: false},
		{name: "keep-alive with parameters", head: "Connection: keep-alive\r\nKeep-Alive: timeout=5\r\n", want: nil, wantKeep: true},
		{name: "proxy challenge dropped", head: "Proxy-Authenticate: Basic\r\nWWW-Authenticate: Basic\r\n",
			want: []string{"WWW-Authenticate: Basic"}, wantKeep: true},
		{name: "Upgrade of a refusal dropped, Trailer kept", head: "Upgrade: TLS/1.2\r\nTrailer: X-Sum\r\n",
			want: []string{"Trailer: X-Sum"}, wantKeep: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h fasthttp.ResponseHeader
			h.DisableNormalizing()
			raw := "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n" + tt.head + "\r\n"
			if err := h.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
				t.Fatal(err)
			}
			h.EnableNormalizing()
			keep, _ := prepareResponse(&h, nil)
			var got []string
			for k, v := range h.All() {
				if s := string(k); s != "Content-Length" && s != "Content-Type" && s != "Server" && s != "Date" {
					got = append(got, s+": "+string(v))
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" || keep != tt.wantKeep {
				t.Errorf("fields (-want +got):\n%s\nkeep-alive = %v, want %v", diff, keep, tt.wantKeep)
			}
		})
	}
}

// FuzzPrepareRequest: whatever head a client sends, what goes upstream
// has no hop-by-hop field but an upgrade's own (and "TE: trailers"), none
// its Connection named, and one X-Forwarded-For line, ending with the
// client.
func FuzzPrepareRequest(f *testing.F) {
	for _, s := range []string{"Connection: close, X-A\r\nX-A: 1\r\n", "X-Forwarded-For: 1.1.1.1\r\nX-Forwarded-For: 2.2.2.2\r\n",
		"Connection: Upgrade\r\nUpgrade: websocket\r\nTE: trailers\r\n", "Keep-Alive: 5\r\nProxy-Authorization: x\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, head string) {
		var req fasthttp.Request
		raw := "GET /p HTTP/1.1\r\nHost: h\r\n" + head + "\r\n"
		if err := req.Header.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
			return // not a head fasthttp's server would take
		}
		ctx := &fasthttp.RequestCtx{}
		ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(10, 0, 0, 9), Port: 4}, nil)
		var r RequestHead
		r.scan(&ctx.Request.Header)
		var named []string
		_, _, scratch := connectionTokens(ctx.Request.Header.All(), nil)
		tokens(scratch, func(n []byte) {
			if !isFramingField(n) && !equalFold(n, fasthttp.HeaderUpgrade) && !equalFold(n, "Te") { // "TE: trailers" is kept
				named = append(named, string(n))
			}
		})
		prepareRequest(ctx, &r, nil)
		xff := 0
		for k, v := range ctx.Request.Header.All() {
			switch {
			case equalFold(k, fasthttp.HeaderXForwardedFor):
				xff++
				if !strings.HasSuffix(string(v), "10.0.0.9") {
					t.Errorf("X-Forwarded-For %q does not end with the client", v)
				}
			case equalFold(k, fasthttp.HeaderConnection) && !(r.Upgrade() && string(v) == "Upgrade"):
				t.Errorf("Connection: %q forwarded", v)
			case isHopField(k) && !equalFold(k, "Te") && !equalFold(k, fasthttp.HeaderTrailer) &&
				!(r.Upgrade() && equalFold(k, fasthttp.HeaderUpgrade)):
				t.Errorf("hop-by-hop %s: %q forwarded", k, v)
			}
			for _, n := range named {
				if equalFold(k, n) {
					t.Errorf("%s, named by Connection, forwarded", k)
				}
			}
		}
		if xff != 1 {
			t.Errorf("%d X-Forwarded-For lines, want 1", xff)
		}
	})
}
