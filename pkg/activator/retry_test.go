package activator

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/pkg/stats"
)

// slamming is a handler that drops the connection without answering: a
// replica that went away mid-request.
func slamming(ctx *fasthttp.RequestCtx) {
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) { c.Close() })
}

// TestRetryOnAnotherReplica: a replica that refuses or drops connections
// is taken out of rotation and the request goes to another one; PUT with
// a buffered body included (idempotent, held in memory: the retry rule
// allows it; a POST is never sent twice: proxycore's TestResendRule).
func TestRetryOnAnotherReplica(t *testing.T) {
	h := newHarness(t, nil, rev("hello", 0,
		Replica{Address: "gone:80", Ready: true}, Replica{Address: "slam:80", Ready: true}, Replica{Address: "ok:80", Ready: true}))
	h.backend("slam:80", true).handler = slamming
	h.backend("ok:80", true)
	for i := range 6 {
		code, body, _ := h.do("hello.default", func(r *fasthttp.Request) {
			if i%2 == 1 {
				r.Header.SetMethod("PUT")
				r.SetBodyString("payload")
			}
		})
		if code != 200 || body != "hello from ok:80" {
			t.Fatalf("request %d: %d %q, want 200 from ok:80", i, code, body)
		}
	}
	set := h.a.routes.Load().byKey["default/hello"].throttle.set.Load()
	if len(set.replicas) > 2 {
		t.Errorf("%d replicas in rotation, want the failed ones out", len(set.replicas))
	}
}

// TestNoRetryForStreamedBody: a streamed request body half sent cannot be
// sent again: the client gets a 502 that says why.
func TestNoRetryForStreamedBody(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MaxBufferedBody = 16 }, rev("hello", 0,
		Replica{Address: "slam:80", Ready: true}, Replica{Address: "ok:80", Ready: true}))
	h.backend("slam:80", true).handler = slamming
	ok := h.backend("ok:80", true)
	// Only slam:80 in rotation; ok:80 stays up to show nothing reaches it.
	h.platform.set(rev("hello", 0, Replica{Address: "slam:80", Ready: true}))
	h.eventually("one replica", func() bool {
		return len(h.a.routes.Load().byKey["default/hello"].throttle.set.Load().replicas) == 1
	})
	code, body, _ := h.do("hello.default", func(r *fasthttp.Request) {
		r.Header.SetMethod("POST")
		r.SetBodyString(strings.Repeat("z", 1000))
	})
	if code != 502 || !strings.Contains(body, "proxying to the replica at slam:80 failed") {
		t.Errorf("got %d %q, want 502 naming the replica", code, body)
	}
	if ok.served.Load() != 0 {
		t.Errorf("the streamed request reached another replica")
	}
}

// TestRetryWaitsForAReplica: with nowhere to retry, the request waits
// (within its deadline) for a replica to come back.
func TestRetryWaitsForAReplica(t *testing.T) {
	r := rev("hello", 0, Replica{Address: "gone:80", Ready: true})
	h := newHarness(t, nil, r)
	done := make(chan int, 1)
	go func() { code, _, _ := h.do("hello.default", nil); done <- code }()
	h.eventually("request queued after the failure", func() bool { return h.a.global.count.Load() == 1 })
	h.backend("gone:80", true) // the replica comes back and answers its probe
	if code := <-done; code != 200 {
		t.Errorf("status %d, want 200 once the replica is back", code)
	}
}

// proberFunc is a Prober from a function.
type proberFunc func(ctx context.Context, addr string) bool

func (f proberFunc) Probe(ctx context.Context, addr string) bool { return f(ctx, addr) }

// countDials wraps the harness's dialer: it counts the dials to each
// address (probes go through the Prober, not here, when it is replaced).
func countDials(o *Options, dials *sync.Map) {
	inner := o.Dial
	o.Dial = func(addr string) (net.Conn, error) {
		n, _ := dials.LoadOrStore(addr, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		return inner(addr)
	}
}

func dialsTo(dials *sync.Map, prefix string) int64 {
	var total int64
	dials.Range(func(k, v any) bool {
		if strings.HasPrefix(k.(string), prefix) {
			total += v.(*atomic.Int64).Load()
		}
		return true
	})
	return total
}

func goneReplicas(n int) []Replica {
	var reps []Replica
	for i := range n {
		reps = append(reps, Replica{Address: fmt.Sprintf("gone%d:80", i), Ready: true})
	}
	return reps
}

// TestDialErrorsDoNotUseRetries: stale replica addresses that refuse
// connections (nothing was sent) do not use up MaxRetries: after more
// dial failures than that, the request waits for a replica and gets its
// 200 from the one that appears, instead of a 502.
func TestDialErrorsDoNotUseRetries(t *testing.T) {
	var dials sync.Map
	never := proberFunc(func(context.Context, string) bool { return false })
	h := newHarness(t, func(o *Options) {
		o.MaxRetries = 2
		o.Prober = never
		countDials(o, &dials)
	}, rev("hello", 0, goneReplicas(4)...))
	done := make(chan string, 1)
	go func() { code, body, _ := h.do("hello.default", nil); done <- fmt.Sprintf("%d %s", code, body) }()
	h.eventually("the request waiting after the dial failures", func() bool { return h.a.global.count.Load() == 1 })
	if n := dialsTo(&dials, "gone"); n != 4 {
		t.Errorf("%d dials to the stale replicas, want 4 (each once, then out of rotation)", n)
	}
	h.backend("ok:80", true)
	h.platform.set(rev("hello", 0, append(goneReplicas(4), Replica{Address: "ok:80", Ready: true})...))
	if got := <-done; got != "200 hello from ok:80" {
		t.Errorf("got %q, want 200 from the live replica", got)
	}
}

// TestDialErrorsEndAtQueueDeadline: when every replica keeps refusing,
// the request waits until its queue deadline and gets the queue timeout's
// 504, naming the unreachable replica, not a 502.
func TestDialErrorsEndAtQueueDeadline(t *testing.T) {
	r := rev("hello", 0, goneReplicas(4)...)
	r.QueueTimeout = 300 * time.Millisecond
	h := newHarness(t, func(o *Options) { o.MaxRetries = 2 }, r)
	start := time.Now()
	code, body, _ := h.do("hello.default", nil)
	elapsed := time.Since(start)
	if code != 504 || !strings.Contains(body, "no replica became available in time (queue timeout 300ms") ||
		!strings.Contains(body, "could not be reached") {
		t.Errorf("got %d %q, want a 504 for the queue timeout naming the unreachable replica", code, body)
	}
	if elapsed < 300*time.Millisecond || elapsed > 3*time.Second {
		t.Errorf("answered after %v, want at the queue deadline (300ms)", elapsed)
	}
	if h.a.global.count.Load() != 0 || h.a.open.Load() != 0 {
		t.Errorf("request still held: queued %d, open %d", h.a.global.count.Load(), h.a.open.Load())
	}
}

// TestResetsUseRetries: other connection errors keep their budget:
// MaxRetries 2 is three attempts, then a 502; MaxRetries 0 means no resend
// (it is not replaced by a default): one attempt, then a 502. (Each
// attempt reaches its replica twice: a connection dropped before any byte
// of the answer is replaced once, as a keep-alive connection closed while
// idle would be.)
func TestResetsUseRetries(t *testing.T) {
	for _, tc := range []struct {
		name              string
		retries, replicas int
		wantServed        int64
	}{
		{"two retries: 3 attempts", 2, 4, 6},
		{"no retry: 1 attempt", 0, 3, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reps []Replica
			for i := range tc.replicas {
				reps = append(reps, Replica{Address: fmt.Sprintf("slam%d:80", i), Ready: true})
			}
			h := newHarness(t, func(o *Options) { o.MaxRetries = tc.retries }, rev("hello", 0, reps...))
			for _, r := range reps {
				h.backend(r.Address, true).handler = slamming
			}
			code, body, _ := h.do("hello.default", nil)
			if code != 502 || !strings.Contains(body, "proxying to the replica at slam") {
				t.Errorf("got %d %q, want 502", code, body)
			}
			var served int64
			for _, r := range reps {
				served += h.backends[r.Address].served.Load()
			}
			if served != tc.wantServed {
				t.Errorf("the replicas saw %d requests, want %d", served, tc.wantServed)
			}
		})
	}
}

// TestNotSentGoesElsewhere: a replica whose queue-proxy proves the app
// never got the request (its app refused the connection; its readiness
// fails at once) does not answer the client: a POST with its body waits,
// as for a revision at zero, and goes to the next replica that comes.
// A forged proof is an ordinary answer. The field never reaches the client.
func TestNotSentGoesElsewhere(t *testing.T) {
	const secret = "install-secret-0123456789"
	m, err := stats.NewProxyMarker(stats.NamespaceProxySecret(secret, "default"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		value    string
		wantCode int
		wantBody string
	}{
		{"the proof", string(m.NotSent()), 200, "hello from ok:80 charge-card-42"},
		{"a forged proof", "yes", 503, "queue-proxy: the app cannot be reached"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			refusing := rev("hello", 0, Replica{Address: "refuse:80", Ready: true})
			h := newHarness(t, func(o *Options) { o.ProxySecret = secret }, refusing)
			b := h.backend("refuse:80", true)
			b.handler = func(ctx *fasthttp.RequestCtx) {
				b.ready.Store(false) // its queue-proxy is not ready from now on
				ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
				ctx.SetBodyString("queue-proxy: the app cannot be reached")
				ctx.Response.Header.Set(stats.NotSentHeaderName, tt.value)
			}
			h.backend("ok:80", true).handler = func(ctx *fasthttp.RequestCtx) {
				fmt.Fprintf(ctx, "hello from ok:80 %s", ctx.Request.Body())
			}
			type answer struct {
				code       int
				body, seen string
			}
			done := make(chan answer, 1)
			go func() {
				code, body, resp := h.do("hello.default", func(r *fasthttp.Request) {
					r.Header.SetMethod("POST")
					r.SetBodyString("charge-card-42")
				})
				done <- answer{code, body, string(resp.Header.Peek(stats.NotSentHeaderName))}
			}()
			if tt.wantCode == 200 {
				h.eventually("the request held", func() bool { return h.a.global.count.Load() == 1 })
				h.platform.set(rev("hello", 0, Replica{Address: "refuse:80", Ready: true}, Replica{Address: "ok:80", Ready: true}))
			}
			got := <-done
			if got.code != tt.wantCode || got.body != tt.wantBody || got.seen != "" {
				t.Errorf("got %d %q (%s: %q), want %d %q and no such field", got.code, got.body, stats.NotSentHeaderName, got.seen,
					tt.wantCode, tt.wantBody)
			}
			if n := b.served.Load(); n != 1 {
				t.Errorf("the refusing replica got %d requests, want 1", n)
			}
		})
	}
}
