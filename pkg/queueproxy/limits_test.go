package queueproxy

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/valyala/fasthttp"
)

// TestTimeouts: each timeout answers 504 with a body naming it. The app
// sleeps far longer than the timeout, so the outcome does not depend on the
// machine's speed.
func TestTimeouts(t *testing.T) {
	tests := []struct {
		name     string
		edit     func(*Config)
		path     string
		wantBody string // a substring
	}{
		{name: "request timeout", edit: func(c *Config) { c.RequestTimeout, c.ResponseStartTimeout = 300*time.Millisecond, 300*time.Millisecond },
			path: "/?sleep=1500ms", wantBody: "request timeout"},
		{name: "response start timeout", edit: func(c *Config) { c.ResponseStartTimeout = 300 * time.Millisecond },
			path: "/?sleep=1500ms", wantBody: "response start timeout"},
		{name: "idle timeout before the response", edit: func(c *Config) { c.IdleTimeout = 300 * time.Millisecond },
			path: "/?sleep=1500ms", wantBody: "idle timeout"},
		{name: "request timeout while reading a buffered body",
			edit: func(c *Config) { c.RequestTimeout, c.ResponseStartTimeout = 300*time.Millisecond, 300*time.Millisecond },
			path: "/slowfixed?n=1500", wantBody: "request timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, testConfig(t, tt.edit), startApp(t, testApp))
			status, body, _ := r.do(t, uri(tt.path))
			if status != fasthttp.StatusGatewayTimeout || !strings.Contains(body, tt.wantBody) {
				t.Errorf("got %d %q, want 504 containing %q", status, body, tt.wantBody)
			}
			waitUntil(t, func() bool { return r.q.proxy.acct.InFlight() == 0 })
		})
	}
}

// TestIdleTimeoutMidStream: once the response has started, an idle app
// makes the proxy cut the connection (a 504 can no longer be sent); a
// steady stream slower than the idle timeout in total is not cut.
func TestIdleTimeoutMidStream(t *testing.T) {
	r := newRig(t, testConfig(t, func(c *Config) { c.IdleTimeout = 500 * time.Millisecond }), startApp(t, testApp))
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.SetRequestURI("http://queue-proxy/chunked?n=200000")
	var resp fasthttp.Response
	if err := r.client.Do(req, &resp); err != nil || len(resp.Body()) != 200000 {
		t.Fatalf("steady stream: %d bytes, %v", len(resp.Body()), err)
	}
	req.SetRequestURI("http://queue-proxy/slowbody?n=2500")
	if err := r.client.Do(req, &resp); err == nil && string(resp.Body()) == "firstsecond" {
		t.Errorf("stalled stream was not cut: %q", resp.Body())
	}
	waitUntil(t, func() bool { return r.q.proxy.acct.InFlight() == 0 })
}

// blockingApp holds every request until release is closed.
type blockingApp struct {
	release chan struct{}
	mu      sync.Mutex
	running int
	peak    int
}

func (a *blockingApp) handle(ctx *fasthttp.RequestCtx) {
	a.mu.Lock()
	a.running++
	a.peak = max(a.peak, a.running)
	a.mu.Unlock()
	<-a.release
	a.mu.Lock()
	a.running--
	a.mu.Unlock()
	ctx.SetBody(helloBody)
}

// TestBreakerLimit: with containerConcurrency 2, two requests reach the
// app, twenty queue, the next one gets 503 with Retry-After, and every
// queued request completes once the app moves.
func TestBreakerLimit(t *testing.T) {
	app := &blockingApp{release: make(chan struct{})}
	r := newRig(t, testConfig(t, func(c *Config) { c.ContainerConcurrency = 2 }), startApp(t, app.handle))
	const admitted = 2 + 20
	statuses := make(chan int, admitted)
	var wg sync.WaitGroup
	for range admitted {
		wg.Go(func() {
			status, _, _, err := r.send(nil)
			if err != nil {
				t.Errorf("queued request: %v", err)
			}
			statuses <- status
		})
	}
	waitUntil(t, func() bool { return r.q.proxy.breaker.Pending() == admitted })
	status, body, resp := r.do(t, nil)
	got := []any{status, string(resp.Header.Peek("Retry-After")), strings.Contains(body, "CONTAINER_CONCURRENCY=2")}
	if diff := cmp.Diff([]any{503, "1", true}, got); diff != "" {
		t.Errorf("overflow request: status, Retry-After, body names the limit (-want +got):\n%s\nbody: %s", diff, body)
	}
	close(app.release)
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != 200 {
			t.Errorf("queued request got %d, want 200", s)
		}
	}
	if app.peak > 2 {
		t.Errorf("app saw %d requests at once, limit 2", app.peak)
	}
	snap := r.q.reporter.report(time.Now())
	if snap.RequestCount != admitted+1 {
		t.Errorf("requests counted = %d, want %d (the rejected one included)", snap.RequestCount, admitted+1)
	}
}

// TestQueueTimeout: a request still queued at its deadline gets 504, and
// leaves the queue.
func TestQueueTimeout(t *testing.T) {
	app := &blockingApp{release: make(chan struct{})}
	r := newRig(t, testConfig(t, func(c *Config) {
		c.ContainerConcurrency = 1
		c.ResponseStartTimeout = 300 * time.Millisecond
	}), startApp(t, app.handle))
	first := make(chan int, 1)
	go func() {
		s, _, _, err := r.send(nil)
		if err != nil {
			t.Errorf("first request: %v", err)
		}
		first <- s
	}()
	waitUntil(t, func() bool { return r.q.proxy.breaker.InFlight() == 1 })
	status, body, _ := r.do(t, nil)
	if status != 504 || !strings.Contains(body, "response start timeout") {
		t.Errorf("queued request: %d %q, want 504 response start timeout", status, body)
	}
	if w := r.q.proxy.breaker.Waiting(); w != 0 {
		t.Errorf("waiting after timeout = %d, want 0", w)
	}
	close(app.release)
	<-first
}
