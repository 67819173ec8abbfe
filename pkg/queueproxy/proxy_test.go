package queueproxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/internal/testnet"
)

// testApp answers by path; see the cases.
func testApp(ctx *fasthttp.RequestCtx) {
	q := ctx.QueryArgs()
	if d, err := time.ParseDuration(string(q.Peek("sleep"))); err == nil {
		time.Sleep(d)
	}
	n, _ := strconv.Atoi(string(q.Peek("n")))
	path := string(ctx.Path())
	if strings.HasPrefix(string(ctx.Request.Header.RequestURI()), "/headers") {
		path = "/headers"
	}
	switch path {
	case "/headers":
		h := &ctx.Request.Header
		fmt.Fprintf(ctx, "xff=%s xfp=%s uri=%s proxy=%s te=%s", h.Peek("X-Forwarded-For"), h.Peek("X-Forwarded-Proto"),
			h.RequestURI(), h.Peek("K-Proxy-Request"), h.Peek("TE"))
	case "/echo":
		body, err := io.ReadAll(ctx.RequestBodyStream())
		if err != nil {
			ctx.Error(err.Error(), 500)
			return
		}
		fmt.Fprintf(ctx, "%d %x", len(body), sum(body))
	case "/big":
		ctx.SetBody(pattern(n))
	case "/chunked":
		ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
			p := pattern(n)
			for len(p) > 0 {
				k := min(len(p), 3000)
				_, _ = w.Write(p[:k])
				_ = w.Flush()
				p = p[k:]
			}
		})
	case "/slowbody":
		ctx.Response.ImmediateHeaderFlush = true
		ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
			_, _ = w.WriteString("first")
			_ = w.Flush()
			time.Sleep(time.Duration(n) * time.Millisecond)
			_, _ = w.WriteString("second")
		})
	case "/slowfixed": // Content-Length known, the body late
		ctx.Response.ImmediateHeaderFlush = true
		ctx.SetBodyStream(&slowReader{delay: time.Duration(n) * time.Millisecond, parts: []string{"first", "second"}}, 11)
	case "/nocontent":
		ctx.SetStatusCode(fasthttp.StatusNoContent)
	case "/close":
		ctx.SetConnectionClose()
		ctx.SetBodyString("bye")
	default:
		ctx.SetBody(helloBody)
	}
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}

func sum(b []byte) uint32 {
	var s uint32
	for i, c := range b {
		s = s*31 + uint32(c) + uint32(i)
	}
	return s
}

func TestProxy(t *testing.T) {
	r := newRig(t, testConfig(t, nil), startApp(t, testApp))
	upload := pattern(3 << 20)
	tests := []struct {
		name       string
		edit       func(*fasthttp.Request)
		wantStatus int
		wantBody   string
	}{
		{name: "hello", wantStatus: 200, wantBody: "hello\n"},
		{name: "forwarded headers set, hop-by-hop dropped (TE: trailers kept), path verbatim",
			edit: func(r *fasthttp.Request) {
				r.SetRequestURI("http://queue-proxy/headers//a/../b?x=1")
				r.Header.Set("TE", "trailers")
				r.Header.Set("K-Proxy-Request", testMarker)
			},
			wantStatus: 200, wantBody: "xff=0.0.0.0 xfp=http uri=/headers//a/../b?x=1 proxy= te=trailers"},
		{name: "a forged marker is stripped too",
			edit: func(r *fasthttp.Request) {
				r.SetRequestURI("http://queue-proxy/headers")
				r.Header.Set("K-Proxy-Request", "activator")
			},
			wantStatus: 200, wantBody: "xff=0.0.0.0 xfp=http uri=/headers proxy= te="},
		{name: "forwarded headers appended to, proto kept",
			edit: func(r *fasthttp.Request) {
				r.SetRequestURI("http://queue-proxy/headers")
				r.Header.Set("X-Forwarded-For", "10.0.0.1")
				r.Header.Set("X-Forwarded-Proto", "https")
			},
			wantStatus: 200, wantBody: "xff=10.0.0.1, 0.0.0.0 xfp=https uri=/headers proxy= te="},
		{name: "large upload streams to the app",
			edit: func(r *fasthttp.Request) {
				r.SetRequestURI("http://queue-proxy/echo")
				r.Header.SetMethod("POST")
				r.SetBodyStream(bytes.NewReader(upload), len(upload))
			},
			wantStatus: 200, wantBody: fmt.Sprintf("%d %x", len(upload), sum(upload))},
		{name: "chunked upload",
			edit: func(r *fasthttp.Request) {
				r.SetRequestURI("http://queue-proxy/echo")
				r.Header.SetMethod("POST")
				r.SetBodyStream(bytes.NewReader(upload[:100000]), -1)
			},
			wantStatus: 200, wantBody: fmt.Sprintf("%d %x", 100000, sum(upload[:100000]))},
		{name: "small body buffered", edit: uri("/big?n=100"), wantStatus: 200, wantBody: string(pattern(100))},
		{name: "large body streamed", edit: uri("/big?n=1000000"), wantStatus: 200, wantBody: string(pattern(1000000))},
		{name: "chunked body streamed", edit: uri("/chunked?n=200000"), wantStatus: 200, wantBody: string(pattern(200000))},
		{name: "long response", edit: uri("/slowbody?n=300"), wantStatus: 200, wantBody: "firstsecond"},
		{name: "no content", edit: uri("/nocontent"), wantStatus: 204},
		{name: "app closes its connection", edit: uri("/close"), wantStatus: 200, wantBody: "bye"},
		{name: "HEAD", edit: func(r *fasthttp.Request) { r.Header.SetMethod("HEAD") }, wantStatus: 200},
		{name: "after close, keep-alive still works", wantStatus: 200, wantBody: "hello\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body, _ := r.do(t, tt.edit)
			if diff := cmp.Diff([]any{tt.wantStatus, tt.wantBody}, []any{status, body}); diff != "" {
				t.Errorf("status, body (-want +got):\n%s", truncate(diff))
			}
		})
	}
	if got := r.q.proxy.acct.InFlight(); got != 0 {
		t.Errorf("in flight after all requests = %d, want 0", got)
	}
}

func uri(pathQuery string) func(*fasthttp.Request) {
	return func(r *fasthttp.Request) { r.SetRequestURI("http://queue-proxy" + pathQuery) }
}

func truncate(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}

// TestProbeAnswers: the probe header and kubelet probes are answered from
// readiness without reaching the app, and are not counted. During a drain
// the activator's probe fails, the kubelet's does not: the pod is
// terminating (out of its endpoints already), and a failing kubelet probe
// would only make Warning Events.
func TestProbeAnswers(t *testing.T) {
	r := newRig(t, testConfig(t, nil), startApp(t, func(ctx *fasthttp.RequestCtx) {
		t.Error("a probe reached the app")
	}))
	probe := func(name, value string) func(*fasthttp.Request) {
		return func(r *fasthttp.Request) { r.Header.Set(name, value) }
	}
	tests := []struct {
		name       string
		ready      bool
		draining   bool
		edit       func(*fasthttp.Request)
		wantStatus int
		wantBody   string
	}{
		{name: "ready", ready: true, edit: probe("K-Network-Probe", "queue"), wantStatus: 200, wantBody: "queue"},
		{name: "not ready", edit: probe("K-Network-Probe", "queue"), wantStatus: 503, wantBody: "queue-proxy: not ready\n"},
		{name: "unknown probe", ready: true, edit: probe("K-Network-Probe", "other"), wantStatus: 400,
			wantBody: "queue-proxy: unexpected K-Network-Probe value, want queue\n"},
		{name: "kubelet ready", ready: true, edit: probe("User-Agent", "kube-probe/1.31"), wantStatus: 200, wantBody: "queue"},
		{name: "kubelet not ready", edit: probe("User-Agent", "kube-probe/1.31"), wantStatus: 503, wantBody: "queue-proxy: not ready\n"},
		{name: "draining", ready: true, draining: true, edit: probe("K-Network-Probe", "queue"), wantStatus: 503,
			wantBody: "queue-proxy: not ready\n"},
		{name: "kubelet while draining", ready: true, draining: true, edit: probe("User-Agent", "kube-probe/1.31"), wantStatus: 200,
			wantBody: "queue"},
		{name: "kubelet while draining, app gone", draining: true, edit: probe("User-Agent", "kube-probe/1.31"), wantStatus: 503,
			wantBody: "queue-proxy: not ready\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.q.ready.app.Store(tt.ready)
			r.q.ready.draining.Store(tt.draining)
			status, body, _ := r.do(t, tt.edit)
			if diff := cmp.Diff([]any{tt.wantStatus, tt.wantBody}, []any{status, body}); diff != "" {
				t.Errorf("status, body (-want +got):\n%s", diff)
			}
		})
	}
	if s := r.q.reporter.report(time.Now()); s.RequestCount != 0 {
		t.Errorf("probes counted as requests: %d", s.RequestCount)
	}
}

// TestProxiedAccounting: requests from the activator (its marker with the
// secret) are counted in the totals and in the proxied part; a forged
// marker, sent straight to the queue-proxy, counts as a direct request.
func TestProxiedAccounting(t *testing.T) {
	tests := []struct {
		name        string
		secret      string // ACTIVATOR_PROXY_SECRET
		marker      string // K-Proxy-Request sent with every other request
		wantProxied uint64
	}{
		{name: "the activator's marker", secret: testProxySecret, marker: testMarker, wantProxied: 3},
		{name: "forged plain marker", secret: testProxySecret, marker: "activator", wantProxied: 0},
		{name: "forged wrong secret", secret: testProxySecret, marker: "activator test-secret-0123456788", wantProxied: 0},
		{name: "no secret configured: never honoured", secret: "", marker: "activator", wantProxied: 0},
		{name: "no secret configured, marker with a secret", secret: "", marker: testMarker, wantProxied: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, testConfig(t, func(c *Config) { c.ProxySecret = tt.secret }), startApp(t, testApp))
			r.q.reporter.report(time.Now())
			for i := range 5 {
				r.do(t, func(req *fasthttp.Request) {
					if i%2 == 0 {
						req.Header.Set("K-Proxy-Request", tt.marker)
					}
				})
			}
			s := r.q.reporter.report(time.Now())
			got := []uint64{s.RequestCount, s.ProxiedRequestCount}
			if diff := cmp.Diff([]uint64{5, tt.wantProxied}, got); diff != "" {
				t.Errorf("requests, proxied (-want +got):\n%s", diff)
			}
			if s.AverageConcurrency <= 0 || s.AverageProxiedConcurrency > s.AverageConcurrency {
				t.Errorf("concurrency %v, proxied %v: want 0 < proxied <= total", s.AverageConcurrency, s.AverageProxiedConcurrency)
			}
		})
	}
}

// slowReader returns its parts with a delay before each but the first.
type slowReader struct {
	delay time.Duration
	parts []string
	n     int
}

func (r *slowReader) Read(p []byte) (int, error) {
	if r.n == len(r.parts) {
		return 0, io.EOF
	}
	if r.n > 0 {
		time.Sleep(r.delay)
	}
	r.n++
	return copy(p, r.parts[r.n-1]), nil
}

// TestTwoContentTypesRefused: a request with the Content-Type field twice
// gets 400 naming the field and its connection closed (the request
// pipelined behind it is never read), and reaches no app. Before, the app
// got it with the last value only (fasthttp keeps one).
func TestTwoContentTypesRefused(t *testing.T) {
	var served atomic.Int64
	r := newRig(t, testConfig(t, nil), startApp(t, func(ctx *fasthttp.RequestCtx) { served.Add(1); testApp(ctx) }))
	c, err := servingListenerT(t, r).Dial()
	if err != nil {
		t.Fatal(err)
	}
	testnet.TwoContentTypesRefused(t, c, "q")
	if n := served.Load(); n != 0 {
		t.Errorf("the app served %d requests, want 0", n)
	}
}
