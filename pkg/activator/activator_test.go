package activator

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

func TestRouting(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.RevisionHeader = true }, rev("hello", 0, Replica{Address: "r1:80", Ready: true}))
	b := h.backend("r1:80", true)
	tests := []struct {
		name     string
		host     string
		header   string // Ebb-Revision
		wantCode int
		wantBody string
	}{
		{name: "name.namespace", host: "hello.default", wantCode: 200, wantBody: "hello from r1:80"},
		{name: "cluster local with port", host: "hello.default.svc.cluster.local:8012", wantCode: 200, wantBody: "hello from r1:80"},
		{name: "local domain", host: "hello.localhost:8080", wantCode: 200, wantBody: "hello from r1:80"},
		{name: "header", host: "whatever", header: "default/hello", wantCode: 200, wantBody: "hello from r1:80"},
		{name: "unknown revision", host: "nope.default", wantCode: 404, wantBody: "no revision default/nope"},
		{name: "unknown header", host: "hello.default", header: "default/nope", wantCode: 404, wantBody: "Ebb-Revision header"},
		{name: "not a revision host", host: "example.com.au.x", wantCode: 404, wantBody: "names no revision"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body, _ := h.do(tt.host, func(r *fasthttp.Request) {
				if tt.header != "" {
					r.Header.Set(revisionHeader, tt.header)
				}
			})
			if code != tt.wantCode || !strings.Contains(body, tt.wantBody) {
				t.Errorf("got %d %q, want %d containing %q", code, body, tt.wantCode, tt.wantBody)
			}
		})
	}
	if got := b.proxied.Load(); got != 4 || b.served.Load() != 4 {
		t.Errorf("replica saw %d requests, %d with %s; want 4 and 4", b.served.Load(), got, "K-Proxy-Request")
	}
}

func TestForwardedHeaders(t *testing.T) {
	h := newHarness(t, nil, rev("hello", 0, Replica{Address: "r1:80", Ready: true}))
	b := h.backend("r1:80", true)
	var got fasthttp.RequestHeader
	b.handler = func(ctx *fasthttp.RequestCtx) { ctx.Request.Header.CopyTo(&got) }
	h.do("hello.default", func(r *fasthttp.Request) {
		r.Header.Set("X-Forwarded-For", "10.0.0.1")
		r.Header.Set(revisionHeader, "default/hello")
	})
	if v := string(got.Peek("X-Forwarded-For")); !strings.HasPrefix(v, "10.0.0.1, ") {
		t.Errorf("X-Forwarded-For = %q, want the client appended to 10.0.0.1", v)
	}
	if v := got.Peek(revisionHeader); v != nil {
		t.Errorf("%s forwarded: %q", revisionHeader, v)
	}
	if string(got.Host()) != "hello.default" || string(got.RequestURI()) != "/path?q=1" {
		t.Errorf("host %q uri %q, want hello.default /path?q=1", got.Host(), got.RequestURI())
	}
}

func TestProbeAnswer(t *testing.T) {
	h := newHarness(t, nil)
	code, body, _ := h.do("anything", func(r *fasthttp.Request) { r.Header.Set("K-Network-Probe", "activator") })
	if code != 200 || body != "activator" {
		t.Errorf("probe answered %d %q, want 200 activator", code, body)
	}
}

// TestColdStart: requests for a revision whose replica is not ready wait,
// the autoscaler is poked once, and all go through as soon as the
// replica answers its probe.
func TestColdStart(t *testing.T) {
	h := newHarness(t, nil, rev("hello", 0, Replica{Address: "r1:80"}))
	b := h.backend("r1:80", false)
	const n = 10
	codes := make(chan int, n)
	for range n {
		go func() { code, _, _ := h.do("hello.default", nil); codes <- code }()
	}
	h.eventually("requests queued", func() bool { return h.a.global.count.Load() == n })
	if got := h.sink.pokeCount(); got != 1 {
		t.Errorf("pokes = %d, want 1", got)
	}
	b.ready.Store(true)
	for range n {
		if code := <-codes; code != 200 {
			t.Errorf("status %d, want 200", code)
		}
	}
	if h.a.global.count.Load() != 0 || h.a.global.bytes.Load() != 0 {
		t.Errorf("queue budget not refunded")
	}
}

// TestReplicaArrives: the platform adds the first replica later; the
// waiting request's body (read only once a replica is free) arrives whole.
func TestReplicaArrives(t *testing.T) {
	h := newHarness(t, nil, rev("hello", 1))
	h.backend("r1:80", true).handler = func(ctx *fasthttp.RequestCtx) { ctx.SetBody(ctx.PostBody()) }
	done := make(chan string, 1)
	go func() {
		code, body, _ := h.do("hello.default", func(r *fasthttp.Request) {
			r.Header.SetMethod("POST")
			r.SetBodyString(strings.Repeat("payload ", 2000))
		})
		done <- fmt.Sprint(code, " ", len(body))
	}()
	h.eventually("request queued", func() bool { return h.a.global.count.Load() == 1 })
	if got := h.a.global.bytes.Load(); got <= prefetchCost || got > 2*prefetchCost {
		t.Errorf("a waiting request holds %d bytes, want its head and the %d read ahead of its body", got, prefetchCost)
	}
	h.platform.set(rev("hello", 1, Replica{Address: "r1:80"}))
	if got := <-done; got != "200 16000" {
		t.Errorf("got %q, want 200 with the 16000-byte body echoed", got)
	}
}

func TestQueueBounds(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Queue.PerRevision = 2 }, rev("hello", 0))
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { h.do("hello.default", nil) })
	}
	h.eventually("two queued", func() bool { return h.a.global.count.Load() == 2 })
	code, body, resp := h.do("hello.default", nil)
	if code != 503 || !strings.Contains(body, "revision queue is full") || string(resp.Header.Peek("Retry-After")) != "1" {
		t.Errorf("third request: %d %q Retry-After %q; want 503, queue full, 1", code, body, resp.Header.Peek("Retry-After"))
	}
	h.platform.set() // removing the revision fails the queued requests
	wg.Wait()
}

func TestQueueTimeout(t *testing.T) {
	r := rev("hello", 0)
	r.QueueTimeout = 30 * time.Millisecond
	h := newHarness(t, nil, r)
	code, body, resp := h.do("hello.default", nil)
	if code != 504 || !strings.Contains(body, "queue timeout") || len(resp.Header.Peek("Retry-After")) == 0 {
		t.Errorf("got %d %q, want 504 with queue timeout and Retry-After", code, body)
	}
}

func TestRequestTimeout(t *testing.T) {
	r := rev("hello", 0, Replica{Address: "r1:80", Ready: true})
	r.Timeout = 50 * time.Millisecond
	h := newHarness(t, nil, r)
	b := h.backend("r1:80", true)
	b.hold = make(chan struct{})
	defer close(b.hold)
	code, body, _ := h.do("hello.default", nil)
	if code != 504 || !strings.Contains(body, "request timeout") {
		t.Errorf("got %d %q, want 504 request timeout", code, body)
	}
}

// TestCapacityShare: containerConcurrency 4 shared by 2 activators gives
// this one 2 slots per replica.
func TestCapacityShare(t *testing.T) {
	r := rev("hello", 4, Replica{Address: "r1:80", Ready: true})
	r.Activators = 2
	h := newHarness(t, nil, r)
	b := h.backend("r1:80", true)
	b.hold = make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { h.do("hello.default", nil) })
	}
	h.eventually("one queued", func() bool { return h.a.global.count.Load() == 1 && b.inFlight.Load() == 2 })
	close(b.hold)
	wg.Wait()
	if m := b.maxSeen.Load(); m != 2 {
		t.Errorf("replica saw %d at once, want 2", m)
	}
}

func TestStreamingBodies(t *testing.T) {
	h := newHarness(t, nil, rev("hello", 0, Replica{Address: "r1:80", Ready: true}))
	b := h.backend("r1:80", true)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	b.handler = func(ctx *fasthttp.RequestCtx) {
		if ctx.IsPost() {
			ctx.SetBodyString(strings.Repeat("x", len(ctx.PostBody())))
			return
		}
		ctx.SetBody(big)
	}
	code, body, _ := h.do("hello.default", nil)
	if code != 200 || body != string(big) {
		t.Errorf("GET: %d, %d bytes; want 200 and %d bytes", code, len(body), len(big))
	}
	code, body, _ = h.do("hello.default", func(r *fasthttp.Request) {
		r.Header.SetMethod("POST")
		r.SetBody(big[:200<<10]) // above MaxBufferedBody: streams
	})
	if code != 200 || len(body) != 200<<10 {
		t.Errorf("POST: %d, %d bytes; want 200 and %d", code, len(body), 200<<10)
	}
	h.eventually("slots released", func() bool { return h.a.open.Load() == 0 })
}
