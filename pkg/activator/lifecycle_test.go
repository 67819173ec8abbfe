package activator

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"ebb.dev/ebb/pkg/stats"
)

// TestUpgrade: a websocket-style upgrade is tunnelled both ways.
func TestUpgrade(t *testing.T) {
	h := newHarness(t, nil, rev("hello", 0, Replica{Address: "r1:80", Ready: true}))
	conn, br := openTunnel(t, h)
	echo(t, conn, br, "ping")
	if n := h.a.tunnels.count.Load(); n != 1 {
		t.Errorf("open tunnels = %d, want 1", n)
	}
	conn.Close()
	h.eventually("tunnel closed", func() bool { return h.a.open.Load() == 0 && h.a.tunnels.count.Load() == 0 })
}

// TestUpgradeReplicaCloses: when the replica ends the tunnel, the client's
// connection closes too (fasthttp's hijacked connection ignores Close).
func TestUpgradeReplicaCloses(t *testing.T) {
	h := newHarness(t, nil, rev("hello", 0, Replica{Address: "r1:80", Ready: true}))
	conn, br := openTunnel(t, h)
	echo(t, conn, br, "bye")
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("read %q, %v from the tunnel after the replica closed; want EOF", b, err)
	}
	h.eventually("tunnel closed", func() bool { return h.a.open.Load() == 0 && h.a.tunnels.count.Load() == 0 })
}

// openTunnel starts an echoing replica at r1:80 and opens a tunnel to it
// through the activator.
func openTunnel(t *testing.T, h *harness) (net.Conn, *bufio.Reader) {
	t.Helper()
	b := h.backend("r1:80", true)
	b.handler = func(ctx *fasthttp.RequestCtx) {
		if !ctx.Request.Header.ConnectionUpgrade() {
			ctx.Error("want an upgrade", 400)
			return
		}
		ctx.HijackSetNoResponse(true)
		ctx.Hijack(func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
			// Echo until the client closes or says bye.
			buf := make([]byte, 64)
			for {
				n, err := c.Read(buf)
				if err != nil {
					return
				}
				c.Write(buf[:n])
				if strings.HasSuffix(string(buf[:n]), "bye") {
					return
				}
			}
		})
	}
	conn, err := h.net.dial("activator:80")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	io.WriteString(conn, "GET /ws HTTP/1.1\r\nHost: hello.default\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	br := bufio.NewReader(conn)
	var resp fasthttp.Response
	resp.SkipBody = true
	if err := resp.Header.Read(br); err != nil || resp.StatusCode() != 101 {
		t.Fatalf("upgrade answer: %v, status %d; want 101", err, resp.StatusCode())
	}
	return conn, br
}

// echo sends msg through the tunnel and checks it comes back.
func echo(t *testing.T, conn net.Conn, br *bufio.Reader, msg string) {
	t.Helper()
	io.WriteString(conn, msg)
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(br, got); err != nil || string(got) != msg {
		t.Fatalf("echo = %q, %v; want %q", got, err, msg)
	}
}

// stopAsync starts the harness's shutdown and returns a channel closed
// when Run has returned.
func stopAsync(h *harness) <-chan struct{} {
	stop := h.stop
	h.stop = nil
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	return stopped
}

// TestShutdownWaitsForTunnels: a tunnel open at shutdown keeps passing
// bytes while the activator drains (fasthttp's Shutdown alone would let
// the process exit under it), and the activator stops once it closes.
func TestShutdownWaitsForTunnels(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.DrainTimeout = 10 * time.Second },
		rev("hello", 0, Replica{Address: "r1:80", Ready: true}))
	conn, br := openTunnel(t, h)
	stopped := stopAsync(h)
	h.eventually("the listener closed", func() bool {
		c, err := h.net.dial("activator:80")
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	for i := range 3 { // across several of fasthttp's 100ms shutdown polls
		echo(t, conn, br, fmt.Sprintf("during the drain %d", i))
		time.Sleep(100 * time.Millisecond)
		select {
		case <-stopped:
			t.Fatal("the activator stopped with a tunnel open")
		default:
		}
	}
	start := time.Now()
	conn.Close()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the activator did not stop after the tunnel closed")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("stopped %v after the tunnel closed, want at once", d)
	}
	if h.a.open.Load() != 0 || h.a.tunnels.count.Load() != 0 {
		t.Errorf("open requests %d, tunnels %d after stopping; want 0", h.a.open.Load(), h.a.tunnels.count.Load())
	}
}

// TestShutdownClosesTunnelsAtDrainTimeout: a tunnel still open at the
// drain timeout is closed, both ways, and the activator stops.
func TestShutdownClosesTunnelsAtDrainTimeout(t *testing.T) {
	const drain = 300 * time.Millisecond
	h := newHarness(t, func(o *Options) { o.DrainTimeout = drain },
		rev("hello", 0, Replica{Address: "r1:80", Ready: true}))
	conn, br := openTunnel(t, h)
	echo(t, conn, br, "before")
	start := time.Now()
	stopped := stopAsync(h)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := br.ReadByte(); err == nil {
		t.Fatalf("read %q from the tunnel, want it closed", n)
	}
	closedAfter := time.Since(start)
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the activator did not stop")
	}
	if closedAfter < drain || time.Since(start) > drain+2*time.Second {
		t.Errorf("tunnel closed after %v, stopped after %v; want both at the drain timeout (%v)", closedAfter, time.Since(start), drain)
	}
	if h.a.open.Load() != 0 || h.a.tunnels.count.Load() != 0 {
		t.Errorf("open requests %d, tunnels %d after stopping; want 0", h.a.open.Load(), h.a.tunnels.count.Load())
	}
}

// TestReport: one Stat per revision with traffic, concurrency
// time-weighted, the poke's request taken off the count.
func TestReport(t *testing.T) {
	sink := &fakeSink{}
	a, err := New(withDefaults(Options{Listener: &net.TCPListener{}, Platform: newFakePlatform(), Stats: sink, PodName: "act-1"}))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1000, 0)
	a.started = t0.Add(-time.Minute)
	a.apply([]Revision{rev("busy", 0), rev("idle", 0), rev("cold", 0)})
	byKey := a.routes.Load().byKey
	busy, cold := byKey["default/busy"], byKey["default/cold"]
	busy.acct = stats.NewAccounting(t0)
	cold.acct = stats.NewAccounting(t0)
	busy.acct.In(t0, stats.Direct)
	busy.acct.In(t0.Add(500*time.Millisecond), stats.Direct)
	busy.acct.Out(t0.Add(time.Second), stats.Direct)
	cold.acct.In(t0.Add(250*time.Millisecond), stats.Direct) // waiting for a replica
	a.poke(cold, t0.Add(250*time.Millisecond))
	a.poke(cold, t0.Add(260*time.Millisecond)) // within the period: no second poke
	a.report(t0.Add(time.Second))
	want := []stats.Stat{
		{Source: stats.SourceActivator, PodName: "act-1", Revision: "default/busy", Time: t0.Add(time.Second),
			Period: time.Second, ProcessUptime: 61 * time.Second, AverageConcurrency: 1.5, RequestCount: 2},
		{Source: stats.SourceActivator, PodName: "act-1", Revision: "default/cold", Time: t0.Add(time.Second),
			Period: time.Second, ProcessUptime: 61 * time.Second, AverageConcurrency: 0.75, RequestCount: 0},
	}
	if len(sink.batches) != 1 {
		t.Fatalf("%d batches, want 1", len(sink.batches))
	}
	sortStats := cmpopts.SortSlices(func(x, y stats.Stat) bool { return x.Revision < y.Revision })
	if diff := cmp.Diff(want, sink.batches[0], sortStats); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	wantPoke := []stats.Stat{{Source: stats.SourceActivator, PodName: "act-1", Revision: "default/cold",
		Time: t0.Add(250 * time.Millisecond), ProcessUptime: 60250 * time.Millisecond, AverageConcurrency: 1, RequestCount: 1}}
	if diff := cmp.Diff(wantPoke, sink.pokes); diff != "" {
		t.Errorf("pokes (-want +got):\n%s", diff)
	}
	for _, p := range sink.pokes {
		if err := p.Validate(); err != nil {
			t.Errorf("poke does not encode: %v", err)
		}
	}
}

// TestGracefulShutdown: readiness fails first, in-flight requests finish,
// requests still queued at the drain timeout get a 503, Run returns nil.
func TestGracefulShutdown(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.DrainTimeout = 200 * time.Millisecond },
		rev("busy", 0, Replica{Address: "r1:80", Ready: true}), rev("cold", 0))
	b := h.backend("r1:80", true)
	b.hold = make(chan struct{})
	var wg sync.WaitGroup
	results := make(chan string, 2)
	wg.Go(func() { code, _, _ := h.do("busy.default", nil); results <- "busy " + strconv.Itoa(code) })
	wg.Go(func() { _, body, _ := h.do("cold.default", nil); results <- "cold " + strings.TrimSpace(body) })
	h.eventually("both admitted", func() bool { return b.inFlight.Load() == 1 && h.a.global.count.Load() == 1 })
	stop := h.stop
	h.stop = nil
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	h.eventually("not ready", func() bool { return !h.a.Ready() })
	close(b.hold)
	wg.Wait()
	<-stopped
	got := []string{<-results, <-results}
	want := []string{"busy 200", "cold activator: shutting down; retry on another activator"}
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(x, y string) bool { return x < y })); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
}

// TestClientCacheEvicts: a churning revision keeps at most size clients.
func TestClientCacheEvicts(t *testing.T) {
	c, err := newClientCache(2, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := c.get("10.0.0.1:80")
	if c.get("10.0.0.1:80") != first {
		t.Error("the same address got a second client")
	}
	for _, addr := range []string{"10.0.0.2:80", "10.0.0.3:80", "10.0.0.4:80"} {
		c.get(addr)
	}
	if c.len() != 2 {
		t.Errorf("cache holds %d clients, want 2", c.len())
	}
	if c.get("10.0.0.1:80") == first {
		t.Error("the least recently used client was not evicted")
	}
}

// TestRunStopsWithoutTraffic: Run returns nil on cancel and leaves no
// goroutine behind (probe loops included).
func TestRunStopsWithoutTraffic(t *testing.T) {
	h := newHarness(t, nil, rev("hello", 0, Replica{Address: "never:80"}))
	h.eventually("probing", func() bool { return h.a.ctl.revs["default/hello"] != nil })
	stop := h.stop
	h.stop = nil
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { stop(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		var stacks strings.Builder
		pprof.Lookup("goroutine").WriteTo(&stacks, 1)
		t.Fatalf("Run did not return; goroutines:\n%s", stacks.String())
	}
}

// TestDrainTimeoutZero: DrainTimeout 0 means no wait (it is not replaced
// by a default): a request still queued at shutdown fails at once.
func TestDrainTimeoutZero(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.DrainTimeout = 0 }, rev("cold", 0))
	results := make(chan string, 1)
	go func() { _, body, _ := h.do("cold.default", nil); results <- strings.TrimSpace(body) }()
	h.eventually("the request queued", func() bool { return h.a.global.count.Load() == 1 })
	stop := h.stop
	h.stop = nil
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	h.eventually("the queued request answered (well before a default drain of 30s)", func() bool { return len(results) == 1 })
	if got, want := <-results, "activator: shutting down; retry on another activator"; got != want {
		t.Errorf("queued request got %q, want %q", got, want)
	}
	<-stopped
}

// TestNewRefusesZeroLimits: a setting whose 0 has no meaning is refused
// with its name, never replaced by a default.
func TestNewRefusesZeroLimits(t *testing.T) {
	o := DefaultOptions()
	o.Listener, o.Platform = fasthttputil.NewInmemoryListener(), newFakePlatform()
	defer o.Listener.Close()
	o.MaxBufferedBody, o.MaxConns, o.ProbeInterval, o.Queue.Total = 0, 0, 0, 0
	_, err := New(o)
	for _, want := range []string{"max buffered body 0 must be above 0", "max conns 0", "probe interval 0s", "queue limits"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New: %v; want an error containing %q", err, want)
		}
	}
	if _, err := New(Options{}); err == nil || !strings.Contains(err.Error(), "start from DefaultOptions") {
		t.Errorf("New(Options{}): %v; want the zero settings refused", err)
	}
}
