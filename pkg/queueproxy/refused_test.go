package queueproxy

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"
	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/stats"
)

// tcpApp serves "ok" on addr (":0" the first time) until stop.
func tcpApp(t *testing.T, addr string) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("ok") }, Logger: quietLogger{}}
	go func() { _ = s.Serve(ln) }()
	var once sync.Once
	stop := func() { once.Do(func() { _ = s.Shutdown() }) }
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

// TestAppRefusedIsNotSent: once the app refuses connections (it crashed),
// a request is answered 503 that says it never reached the app; only a
// request that carried the activator's armed marker gets the proof
// (stats.NotSentHeaderName), never a direct or forged one. Readiness fails
// with the first refusal (the probe period here is 300 s: only the
// refusal can explain it), and comes back as soon as the app answers.
func TestAppRefusedIsNotSent(t *testing.T) {
	addr, stopApp := tcpApp(t, "127.0.0.1:0")
	_, port, _ := net.SplitHostPort(addr)
	c := testConfig(t, func(c *Config) {
		c.UserPort = mustAtoi(t, port)
		c.ProbePeriod, c.ProbeFailureThreshold = 300*time.Second, 3
	})
	q, err := newQueueProxy(c, zap.NewNop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { q.prober.run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	ln := fasthttputil.NewInmemoryListener()
	go func() { _ = q.serving.Serve(ln) }()
	t.Cleanup(func() { _ = q.serving.Shutdown() })
	r := &rig{q: q, client: &fasthttp.HostClient{Addr: "queue-proxy", Dial: func(string) (net.Conn, error) { return ln.Dial() },
		ReadTimeout: 20 * time.Second}}
	waitUntil(t, q.ready.ready)
	if code, body, _ := r.do(t, nil); code != 200 || body != "ok" {
		t.Fatalf("before the crash: %d %q", code, body)
	}

	stopApp()
	proof, _ := stats.NewProxyMarker(testProxySecret)
	tests := []struct {
		name      string
		marker    string
		wantProof bool
	}{
		{"through the activator", testMarker, true},
		{"direct", "", false},
		{"forged marker", "activator test-secret-0123456788", false},
		{"the plain marker", "activator", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body, resp := r.do(t, func(req *fasthttp.Request) {
				if tt.marker != "" {
					req.Header.Set(stats.ProxyHeaderName, tt.marker)
				}
			})
			if code != 503 || !strings.Contains(body, "did not reach it") || string(resp.Header.Peek("Retry-After")) != "1" {
				t.Errorf("got %d %q Retry-After %q, want 503 saying the request did not reach the app, Retry-After 1", code, body,
					resp.Header.Peek("Retry-After"))
			}
			got := resp.Header.Peek(stats.NotSentHeaderName)
			if tt.wantProof && string(got) != string(proof.NotSent()) || !tt.wantProof && got != nil {
				t.Errorf("%s = %q, want the proof: %v", stats.NotSentHeaderName, got, tt.wantProof)
			}
			if q.ready.ready() {
				t.Error("still ready after the app refused a connection")
			}
		})
	}
	code, _, _ := r.do(t, func(req *fasthttp.Request) { req.Header.Set(stats.ProbeHeaderName, stats.ProbeHeaderValue) })
	if code != 503 {
		t.Errorf("the activator's probe got %d, want 503 at once", code)
	}

	tcpApp(t, addr) // the app restarted
	waitUntil(t, q.ready.ready)
	if code, body, _ := r.do(t, nil); code != 200 || body != "ok" {
		t.Errorf("after the restart: %d %q", code, body)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
