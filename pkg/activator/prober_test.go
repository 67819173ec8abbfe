package activator

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/pkg/stats"
)

// stepClock ticks only when the test sends on its channel; every ticker
// shares it.
type stepClock struct{ c chan time.Time }

func (s stepClock) Now() time.Time                 { return time.Unix(1000, 0) }
func (s stepClock) NewTicker(time.Duration) Ticker { return s }
func (s stepClock) C() <-chan time.Time            { return s.c }
func (s stepClock) Stop()                          {}

// countingProber answers ready from the readyAt-th probe of an address on.
type countingProber struct {
	mu      sync.Mutex
	probes  map[string]int
	readyAt int
	probed  chan string
}

func (p *countingProber) Probe(_ context.Context, addr string) bool {
	p.mu.Lock()
	p.probes[addr]++
	n := p.probes[addr]
	p.mu.Unlock()
	p.probed <- addr
	return n >= p.readyAt
}

// TestProbeLoop: an unready replica is probed at once and then once per
// tick, joins the set on the first ready answer, and is probed no more.
func TestProbeLoop(t *testing.T) {
	clock := stepClock{c: make(chan time.Time)}
	prober := &countingProber{probes: map[string]int{}, readyAt: 3, probed: make(chan string, 10)}
	a, err := New(withDefaults(Options{Listener: &net.TCPListener{}, Platform: newFakePlatform(), Clock: clock, Prober: prober}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); a.ctl.wait() }()
	a.ctl.setContext(ctx)
	a.apply([]Revision{rev("hello", 0, Replica{Address: "r1:80"})})
	usable := func() int { return len(a.routes.Load().byKey["default/hello"].throttle.set.Load().replicas) }
	for i := 1; i <= 3; i++ {
		if i > 1 {
			clock.c <- time.Time{}
		}
		<-prober.probed
		if i < 3 && usable() != 0 {
			t.Fatalf("replica usable after %d probes, want 3", i)
		}
	}
	for usable() != 1 {
		time.Sleep(100 * time.Microsecond) // markReady runs right after the third probe returns
	}
	select {
	case clock.c <- time.Time{}:
		t.Error("the probe loop still runs after the replica became ready")
	case <-time.After(10 * time.Millisecond):
	}
}

// TestHTTPProber speaks the queue-proxy probe protocol.
func TestHTTPProber(t *testing.T) {
	h := newHarness(t, nil)
	b := h.backend("r1:80", false)
	p := newHTTPProber(h.a.clients, time.Second)
	if p.Probe(context.Background(), "r1:80") {
		t.Error("an unready queue-proxy probed ready")
	}
	b.ready.Store(true)
	if !p.Probe(context.Background(), "r1:80") {
		t.Error("a ready queue-proxy probed unready")
	}
	if p.Probe(context.Background(), "nowhere:80") {
		t.Error("an unreachable address probed ready")
	}
	// A server that answers 200 but is not a queue-proxy is not ready.
	s := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("hello") }}
	go s.Serve(h.net.listen("app:80"))
	defer s.Shutdown()
	if p.Probe(context.Background(), "app:80") {
		t.Errorf("a plain app probed ready; the body must be %q", stats.ProbeHeaderValue)
	}
}
