package activator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"ebb.dev/ebb/pkg/stats"
)

// fakePlatform hands the activator whatever the test sets.
type fakePlatform struct {
	updates chan []Revision
}

func newFakePlatform(initial ...Revision) *fakePlatform {
	p := &fakePlatform{updates: make(chan []Revision, 16)}
	p.updates <- initial
	return p
}

func (p *fakePlatform) set(revs ...Revision) { p.updates <- revs }

func (p *fakePlatform) Watch(ctx context.Context, apply func([]Revision)) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case revs := <-p.updates:
			apply(revs)
		}
	}
}

// fakeSink records what the activator reports.
type fakeSink struct {
	mu      sync.Mutex
	batches [][]stats.Stat
	pokes   []stats.Stat
}

func (s *fakeSink) Report(b []stats.Stat) {
	s.mu.Lock()
	s.batches = append(s.batches, b)
	s.mu.Unlock()
}
func (s *fakeSink) Poke(st stats.Stat) { s.mu.Lock(); s.pokes = append(s.pokes, st); s.mu.Unlock() }
func (s *fakeSink) pokeCount() int     { s.mu.Lock(); defer s.mu.Unlock(); return len(s.pokes) }

// network is a set of in-memory listeners by address.
type network struct {
	mu  sync.Mutex
	lns map[string]*fasthttputil.InmemoryListener
}

func (n *network) listen(addr string) *fasthttputil.InmemoryListener {
	n.mu.Lock()
	defer n.mu.Unlock()
	ln := fasthttputil.NewInmemoryListener()
	n.lns[addr] = ln
	return ln
}

func (n *network) dial(addr string) (net.Conn, error) {
	n.mu.Lock()
	ln := n.lns[addr]
	n.mu.Unlock()
	if ln == nil {
		return nil, &net.OpError{Op: "dial", Net: "memory", Err: errors.New("connection refused")}
	}
	return ln.Dial()
}

// backend is a fake replica: it answers the queue-proxy probe while ready
// and echoes who it is otherwise.
type backend struct {
	name     string
	ready    atomic.Bool
	inFlight atomic.Int64
	maxSeen  atomic.Int64
	served   atomic.Int64
	proxied  atomic.Int64  // requests carrying K-Proxy-Request: activator
	hold     chan struct{} // if set, requests wait on it
	handler  fasthttp.RequestHandler
	server   *fasthttp.Server
}

func (b *backend) serve(ctx *fasthttp.RequestCtx) {
	if string(ctx.Request.Header.Peek(stats.ProbeHeaderName)) == stats.ProbeHeaderValue {
		if b.ready.Load() {
			ctx.SetBodyString(stats.ProbeHeaderValue)
		} else {
			ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
		}
		return
	}
	n := b.inFlight.Add(1)
	defer b.inFlight.Add(-1)
	for {
		m := b.maxSeen.Load()
		if n <= m || b.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	b.served.Add(1)
	if string(ctx.Request.Header.Peek(stats.ProxyHeaderName)) == stats.ProxyHeaderValue {
		b.proxied.Add(1)
	}
	if b.hold != nil {
		<-b.hold
	}
	if b.handler != nil {
		b.handler(ctx)
		return
	}
	ctx.Response.Header.Set("X-Replica", b.name)
	fmt.Fprintf(ctx, "hello from %s", b.name)
}

type harness struct {
	t        *testing.T
	a        *Activator
	net      *network
	platform *fakePlatform
	sink     *fakeSink
	client   *fasthttp.HostClient
	backends map[string]*backend
	stop     func()
}

// newHarness starts an activator on an in-memory network; the platform
// starts with revs. tweak edits the options.
func newHarness(t *testing.T, tweak func(*Options), revs ...Revision) *harness {
	t.Helper()
	h := &harness{t: t, net: &network{lns: map[string]*fasthttputil.InmemoryListener{}},
		platform: newFakePlatform(revs...), sink: &fakeSink{}, backends: map[string]*backend{}}
	ln := h.net.listen("activator:80")
	o := DefaultOptions()
	o.Listener, o.Platform, o.Stats, o.PodName, o.Dial = ln, h.platform, h.sink, "activator-0", h.net.dial
	o.Hosts.LocalDomain, o.ProbeInterval, o.DrainTimeout, o.BusyPoll = "localhost", time.Millisecond, time.Second, 0
	if tweak != nil {
		tweak(&o)
	}
	a, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.a = a
	h.client = &fasthttp.HostClient{Addr: "activator:80", Dial: h.net.dial, MaxConns: 1000, ReadTimeout: 10 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	h.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		for _, b := range h.backends {
			b.server.Shutdown()
		}
	}
	t.Cleanup(func() {
		if h.stop != nil {
			h.stop()
		}
	})
	h.eventually("ready", a.Ready)
	return h
}

// backend starts a fake replica at addr.
func (h *harness) backend(addr string, ready bool) *backend {
	return h.backendWith(addr, ready, nil)
}

// backendWith starts a fake replica whose server tweak edits first.
func (h *harness) backendWith(addr string, ready bool, tweak func(*fasthttp.Server)) *backend {
	b := &backend{name: addr}
	b.ready.Store(ready)
	b.server = &fasthttp.Server{Handler: b.serve}
	if tweak != nil {
		tweak(b.server)
	}
	ln := h.net.listen(addr)
	go b.server.Serve(ln)
	h.backends[addr] = b
	return b
}

// do sends a request for host and returns the response (copied).
func (h *harness) do(host string, edit func(*fasthttp.Request)) (int, string, *fasthttp.Response) {
	req, resp := fasthttp.AcquireRequest(), &fasthttp.Response{}
	defer fasthttp.ReleaseRequest(req)
	req.SetRequestURI("http://" + host + "/path?q=1")
	if edit != nil {
		edit(req)
	}
	if err := h.client.DoTimeout(req, resp, 10*time.Second); err != nil {
		h.t.Errorf("request to %s: %v", host, err)
		return 0, "", resp
	}
	return resp.StatusCode(), string(resp.Body()), resp
}

// eventually polls cond for up to 5s: conditions that another goroutine
// makes true, never a fixed wait.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
		time.Sleep(100 * time.Microsecond)
	}
}

func rev(name string, cc int, reps ...Replica) Revision {
	return Revision{Namespace: "default", Name: name, ContainerConcurrency: cc, Timeout: 5 * time.Second, Replicas: reps}
}

// withDefaults is DefaultOptions with the wiring of w (and no busy
// polling: tests share few CPUs).
func withDefaults(w Options) Options {
	o := DefaultOptions()
	o.Listener, o.Platform, o.Stats, o.Prober, o.Clock, o.Dial = w.Listener, w.Platform, w.Stats, w.Prober, w.Clock, w.Dial
	o.PodName, o.BusyPoll = w.PodName, 0
	return o
}
