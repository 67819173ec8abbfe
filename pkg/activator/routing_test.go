package activator

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/internal/testnet"
	"ebb.dev/ebb/pkg/stats"
)

// TestRoutingOptions: the Ebb-Revision header is honoured only when
// enabled; a namespace outside Options.Namespaces gets 404, whatever names
// it.
func TestRoutingOptions(t *testing.T) {
	tests := []struct {
		name     string
		tweak    func(*Options)
		host     string
		header   string // Ebb-Revision
		wantCode int
		wantBody string
	}{
		{name: "header off by default: ignored", host: "whatever", header: "default/hello",
			wantCode: 404, wantBody: `host "whatever" names no revision`},
		{name: "header off: Host routes, header cannot redirect", host: "hello.default", header: "default/nope",
			wantCode: 200, wantBody: "hello from r1:80"},
		{name: "header on", tweak: func(o *Options) { o.RevisionHeader = true }, host: "whatever", header: "default/hello",
			wantCode: 200, wantBody: "hello from r1:80"},
		{name: "namespace served", tweak: func(o *Options) { o.Namespaces = []string{"apps", "default"} }, host: "hello.default",
			wantCode: 200, wantBody: "hello from r1:80"},
		{name: "namespace not served", tweak: func(o *Options) { o.Namespaces = []string{"apps"} }, host: "hello.default",
			wantCode: 404, wantBody: `namespace of "default/hello" is not served by this activator (it serves apps)`},
		{name: "namespace not served, by header", tweak: func(o *Options) { o.Namespaces = []string{"apps"}; o.RevisionHeader = true },
			host: "whatever", header: "default/hello", wantCode: 404, wantBody: "is not served by this activator"},
		{name: "namespace not served, local domain", tweak: func(o *Options) { o.Namespaces = []string{"apps"} },
			host: "hello.localhost", wantCode: 404, wantBody: "is not served by this activator"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.tweak, rev("hello", 0, Replica{Address: "r1:80", Ready: true}))
			b := h.backend("r1:80", true)
			code, body, _ := h.do(tt.host, func(r *fasthttp.Request) {
				if tt.header != "" {
					r.Header.Set(revisionHeader, tt.header)
				}
			})
			if code != tt.wantCode || !strings.Contains(body, tt.wantBody) {
				t.Errorf("got %d %q, want %d containing %q", code, body, tt.wantCode, tt.wantBody)
			}
			if want := int64(0); tt.wantCode != 200 && b.served.Load() != want {
				t.Errorf("replica served %d requests, want %d", b.served.Load(), want)
			}
		})
	}
}

// TestAbsoluteFormTarget: a request routed by its Host header is
// forwarded with that same host; an absolute-form target naming another
// host, and the asterisk form, get 400 and reach no replica.
func TestAbsoluteFormTarget(t *testing.T) {
	h := newHarness(t, nil, rev("hello", 0, Replica{Address: "r1:80", Ready: true}), rev("other", 0, Replica{Address: "r2:80", Ready: true}))
	b1, b2 := h.backend("r1:80", true), h.backend("r2:80", true)
	var seen []string
	b1.handler = func(ctx *fasthttp.RequestCtx) {
		seen = append(seen, string(ctx.Request.Header.Host())+" "+string(ctx.Request.Header.RequestURI()))
	}
	tests := []struct {
		name, head string
		wantCode   int
		wantBody   string
	}{
		{name: "origin form", head: "GET /p HTTP/1.1\r\nHost: hello.default\r\n", wantCode: 200},
		{name: "absolute form, same host", head: "GET http://hello.default/p HTTP/1.1\r\nHost: hello.default\r\n", wantCode: 200},
		{name: "absolute form, same host in other case", head: "GET HTTP://Hello.Default/p HTTP/1.1\r\nHost: hello.default\r\n", wantCode: 200},
		{name: "absolute form, same host with another port", head: "GET http://hello.default:80/p HTTP/1.1\r\nHost: hello.default\r\n",
			wantCode: 400, wantBody: "whose host is the Host header's"},
		{name: "absolute form, other host", head: "GET http://other.default/p HTTP/1.1\r\nHost: hello.default\r\n",
			wantCode: 400, wantBody: "whose host is the Host header's"},
		{name: "absolute form, other host, with a body", head: "POST http://other.default/p HTTP/1.1\r\nHost: hello.default\r\nContent-Length: 3\r\n\r\nabc",
			wantCode: 400, wantBody: "whose host is the Host header's"},
		{name: "asterisk form", head: "OPTIONS * HTTP/1.1\r\nHost: hello.default\r\n", wantCode: 400, wantBody: "use a path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := h.net.dial("activator:80")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			head := tt.head
			if !strings.Contains(head, "\r\n\r\n") {
				head += "\r\n"
			}
			if _, err := io.WriteString(c, head); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantCode || !strings.Contains(string(body), tt.wantBody) {
				t.Errorf("got %d %q, want %d containing %q", resp.StatusCode, body, tt.wantCode, tt.wantBody)
			}
		})
	}
	if b2.served.Load() != 0 {
		t.Errorf("replica of other.default served %d requests, want 0", b2.served.Load())
	}
	want := []string{"hello.default /p", "hello.default /p", "hello.default /p"}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("replica of hello.default saw %q, want %q", seen, want)
	}
}

// TestProxyMarkerSent: the activator replaces any K-Proxy-Request the
// client sent with its own marker, carrying the secret of the revision's
// namespace (another namespace's revision gets another), and follows a
// replaced install secret at once.
func TestProxyMarkerSent(t *testing.T) {
	const secret = "activator-test-secret-42"
	other := rev("hello", 0, Replica{Address: "r2:80", Ready: true})
	other.Namespace = "team-b"
	h := newHarness(t, func(o *Options) { o.ProxySecret = secret }, rev("hello", 0, Replica{Address: "r1:80", Ready: true}), other)
	got := map[string]string{}
	var mu sync.Mutex
	for _, addr := range []string{"r1:80", "r2:80"} {
		h.backend(addr, true).handler = func(ctx *fasthttp.RequestCtx) {
			mu.Lock()
			got[addr] = string(ctx.Request.Header.Peek("K-Proxy-Request"))
			mu.Unlock()
		}
	}
	send := func() {
		forge := func(r *fasthttp.Request) { r.Header.Set("K-Proxy-Request", "activator forged-by-client") }
		h.do("hello.default", forge)
		h.do("hello.team-b", forge)
	}
	check := func(install string) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		for addr, ns := range map[string]string{"r1:80": "default", "r2:80": "team-b"} {
			if want := "activator " + stats.NamespaceProxySecret(install, ns); got[addr] != want {
				t.Errorf("K-Proxy-Request at %s's replica = %q, want %q", ns, got[addr], want)
			}
		}
	}
	send()
	check(secret)
	if err := h.a.SetProxySecret("short"); err == nil {
		t.Error("an invalid secret was accepted")
	}
	const next = "activator-test-secret-rotated"
	if err := h.a.SetProxySecret(next); err != nil {
		t.Fatal(err)
	}
	send()
	check(next)
}

// TestRoutedHostFollowsUpdates: a Host routed before (its revision kept
// by the pooled exchange) is routed again after every platform update: to
// the revision's new replicas, to 404 once the revision is gone, and back.
func TestRoutedHostFollowsUpdates(t *testing.T) {
	h := newHarness(t, nil, rev("hello", 0, Replica{Address: "r1:80", Ready: true}))
	h.backend("r1:80", true)
	h.backend("r2:80", true)
	for range 3 {
		if code, body, _ := h.do("hello.default", nil); code != 200 || body != "hello from r1:80" {
			t.Fatalf("before the update: %d %q", code, body)
		}
	}
	h.platform.set(rev("hello", 0, Replica{Address: "r2:80", Ready: true}))
	h.eventually("the new replica takes the requests", func() bool {
		_, body, _ := h.do("hello.default", nil)
		return body == "hello from r2:80"
	})
	h.platform.set(rev("other", 0))
	h.eventually("the revision's removal is seen", func() bool {
		code, _, _ := h.do("hello.default", nil)
		return code == 404
	})
	h.platform.set(rev("hello", 0, Replica{Address: "r1:80", Ready: true}))
	h.eventually("the revision is back", func() bool {
		code, _, _ := h.do("hello.default", nil)
		return code == 200
	})
}

// TestTwoContentTypesRefused: a request with the Content-Type field twice
// gets 400 naming the field and its connection closed (the request
// pipelined behind it is never read), and reaches no replica. Before, the
// replica got it with the last value only (fasthttp keeps one).
func TestTwoContentTypesRefused(t *testing.T) {
	h := newHarness(t, nil, rev("hello", 0, Replica{Address: "r1:80", Ready: true}))
	b := h.backend("r1:80", true)
	c, err := h.net.dial("activator:80")
	if err != nil {
		t.Fatal(err)
	}
	testnet.TwoContentTypesRefused(t, c, "hello.default")
	if n := b.served.Load(); n != 0 {
		t.Errorf("the replica served %d requests, want 0", n)
	}
}
