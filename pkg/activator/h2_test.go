package activator

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"ebb.dev/ebb/internal/grpcsample"
	"ebb.dev/ebb/internal/testnet"
	"ebb.dev/ebb/pkg/proxy/h2c"
	"ebb.dev/ebb/pkg/stats"
)

// grpcReplica serves the sample Greeter at addr on h's in-memory network
// (where a queue-proxy would be: it takes h2c on its data port).
func (h *harness) grpcReplica(addr string, s *grpcsample.Server) {
	h.t.Helper()
	g := grpc.NewServer()
	grpcsample.Register(g, s)
	ln := h.net.listen(addr)
	go func() { _ = g.Serve(ln) }()
	h.t.Cleanup(g.Stop)
}

// grpcClient is a gRPC client (h2c) to the activator for host.
func (h *harness) grpcClient(host string) *grpc.ClientConn {
	h.t.Helper()
	return testnet.GRPCClient(h.t, "passthrough:///activator:80", grpc.WithAuthority(host),
		grpc.WithContextDialer(func(context.Context, string) (net.Conn, error) { return h.net.dial("activator:80") }))
}

func bounded(t *testing.T) context.Context { return testnet.Within(t, 10*time.Second) }

// The first RPC for a revision at zero waits in the activator's queue,
// pokes the autoscaler once, and succeeds when a replica appears; a
// server-streaming call follows it through.
func TestGRPCAtZeroWaitsForReplica(t *testing.T) {
	h := newHarness(t, nil, rev("greeter", 0))
	cc := h.grpcClient("greeter.default")
	type result struct {
		got string
		err error
	}
	res := make(chan result, 1)
	ctx := bounded(t)
	go func() { got, err := grpcsample.Hello(ctx, cc, "cold"); res <- result{got, err} }()
	h.eventually("a poke", func() bool { return h.sink.pokeCount() == 1 })

	h.grpcReplica("10.0.0.1:8012", &grpcsample.Server{Name: "r1"})
	h.platform.set(rev("greeter", 0, Replica{Address: "10.0.0.1:8012", Ready: true}))
	select {
	case r := <-res:
		if r.err != nil || r.got != "hello, cold" {
			t.Fatalf("Hello at zero = %q, %v; want hello, cold", r.got, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Hello at zero did not return within 10s")
	}
	nums, err := grpcsample.Count(bounded(t), cc, 3)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]uint32{1, 2, 3}, nums); diff != "" {
		t.Errorf("Count (-want +got):\n%s", diff)
	}
	h.eventually("no request open", func() bool { return h.a.open.Load() == 0 })
}

// A stream waits no longer than its grpc-timeout: with no replica, the
// activator answers DEADLINE_EXCEEDED; a cancelled waiting stream leaves
// the queue.
func TestGRPCQueueBoundsAndCancel(t *testing.T) {
	h := newHarness(t, nil, rev("greeter", 0))
	cc := h.grpcClient("greeter.default")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := grpcsample.Hello(ctx, cc, "x"); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("Hello with no replica: %v, want DeadlineExceeded", err)
	}
	h.eventually("no request open", func() bool { return h.a.open.Load() == 0 })

	ctx2, cancel2 := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := grpcsample.Hello(ctx2, cc, "y"); done <- err }()
	h.eventually("one request waiting", func() bool { return h.a.open.Load() == 1 })
	cancel2()
	select {
	case err := <-done:
		if status.Code(err) != codes.Canceled {
			t.Errorf("cancelled Hello: %v, want Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancelled Hello did not return within 10s")
	}
	h.eventually("the cancelled stream left the queue", func() bool { return h.a.open.Load() == 0 })
}

// A host that names no revision: gRPC's mapping of a 404, UNIMPLEMENTED.
func TestGRPCNoRevision(t *testing.T) {
	h := newHarness(t, nil, rev("greeter", 0))
	cc := h.grpcClient("nothing.default")
	if _, err := grpcsample.Hello(bounded(t), cc, "x"); status.Code(err) != codes.Unimplemented {
		t.Errorf("Hello for an unknown revision: %v, want Unimplemented", err)
	}
}

// maxInFlight is a gRPC interceptor pair that records the most calls a
// replica served at once.
type maxInFlight struct{ now, max atomic.Int64 }

func (m *maxInFlight) enter() {
	n := m.now.Add(1)
	for {
		old := m.max.Load()
		if n <= old || m.max.CompareAndSwap(old, n) {
			return
		}
	}
}

func (m *maxInFlight) options() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			m.enter()
			defer m.now.Add(-1)
			return h(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			m.enter()
			defer m.now.Add(-1)
			return h(srv, ss)
		}),
	}
}

// With containerConcurrency 1 a stream holds the replica's one slot for
// its life: a second call waits in the activator's queue, not at the
// replica, and goes when the first ends.
func TestGRPCStreamHoldsActivatorSlot(t *testing.T) {
	h := newHarness(t, nil, rev("greeter", 1, Replica{Address: "10.0.0.1:8012", Ready: true}))
	gate := make(chan struct{})
	var m maxInFlight
	g := grpc.NewServer(m.options()...)
	grpcsample.Register(g, &grpcsample.Server{Gate: gate})
	ln := h.net.listen("10.0.0.1:8012")
	go func() { _ = g.Serve(ln) }()
	t.Cleanup(g.Stop)
	cc := h.grpcClient("greeter.default")
	ctx := bounded(t)
	first, second := make(chan error, 1), make(chan error, 1)
	go func() { _, err := grpcsample.Count(ctx, cc, 2); first <- err }()
	h.eventually("the stream at the replica", func() bool { return m.now.Load() == 1 })
	go func() { _, err := grpcsample.Hello(ctx, cc, "second"); second <- err }()
	h.eventually("the second call queued in the activator", func() bool { return h.a.open.Load() == 2 })
	if got := m.now.Load(); got != 1 {
		t.Fatalf("calls at the replica with one queued = %d, want 1", got)
	}
	close(gate)
	for _, ch := range []chan error{first, second} {
		select {
		case err := <-ch:
			if err != nil {
				t.Errorf("call: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a call did not end within 10s")
		}
	}
	if got := m.max.Load(); got != 1 {
		t.Errorf("most calls at the replica at once = %d, want 1 (containerConcurrency)", got)
	}
}

// Shutdown with a stream in flight: GOAWAY, the stream finishes, then Run
// returns.
func TestGRPCActivatorDrainFinishesStream(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.DrainTimeout = 10 * time.Second }, rev("greeter", 0, Replica{Address: "10.0.0.1:8012", Ready: true}))
	gate := make(chan struct{})
	h.grpcReplica("10.0.0.1:8012", &grpcsample.Server{Gate: gate})
	cc := h.grpcClient("greeter.default")
	ctx := bounded(t)
	res := make(chan error, 1)
	go func() { _, err := grpcsample.Count(ctx, cc, 2); res <- err }()
	h.eventually("the stream open", func() bool { return h.a.open.Load() == 1 })
	stopped := make(chan struct{})
	stop := h.stop
	h.stop = nil
	go func() { stop(); close(stopped) }()
	h.eventually("shutdown begun", func() bool { return !h.a.Ready() })
	select {
	case <-stopped:
		t.Fatal("Run returned with a stream in flight")
	default:
	}
	close(gate)
	select {
	case err := <-res:
		if err != nil {
			t.Errorf("Count during the drain: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not finish within 10s")
	}
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of the stream's end")
	}
}

// An HTTP/1.1 request with "Upgrade: h2c" becomes stream 1 of an HTTP/2
// connection: routed by its Host, forwarded h2c to the replica.
func TestH2CUpgrade(t *testing.T) {
	h := newHarness(t, nil, rev("web", 0, Replica{Address: "10.0.0.1:8012", Ready: true}))
	app := h2c.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Proto+" "+r.Host+" "+r.RequestURI+" "+r.Header.Get(stats.ProxyHeaderName))
	}), h2c.ServerOptions{HeaderTimeout: 5 * time.Second, IdleTimeout: 5 * time.Second})
	ln := h.net.listen("10.0.0.1:8012")
	go func() { _ = app.Serve(ln) }()
	t.Cleanup(func() { _ = app.Close() })
	c, err := h.net.dial("activator:80")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	status, body := testnet.H2CUpgrade(t, c, "GET /up HTTP/1.1\r\nHost: web.default\r\nConnection: Upgrade, HTTP2-Settings\r\n"+
		"Upgrade: h2c\r\nHTTP2-Settings: \r\n\r\n")
	if diff := cmp.Diff([]string{"200", "HTTP/2.0 web.default /up " + stats.ProxyHeaderValue}, []string{status, body}); diff != "" {
		t.Errorf("stream 1 (-want +got):\n%s", diff)
	}
	h.eventually("no request open", func() bool { return h.a.open.Load() == 0 })
}

// A replica that cannot be reached (a stale address) got nothing of the
// stream: the replica is taken out of rotation and the stream waits for
// another, as an HTTP/1.1 request does.
func TestGRPCUnreachableReplicaRetried(t *testing.T) {
	h := newHarness(t, nil, rev("greeter", 0, Replica{Address: "10.0.0.9:8012", Ready: true})) // nothing listens there
	cc := h.grpcClient("greeter.default")
	ctx := bounded(t)
	type result struct {
		got string
		err error
	}
	res := make(chan result, 1)
	go func() { got, err := grpcsample.Hello(ctx, cc, "again"); res <- result{got, err} }()
	h.eventually("the stale replica taken out", func() bool { return len(h.a.routes.Load().byKey["default/greeter"].throttle.set.Load().replicas) == 0 })
	h.grpcReplica("10.0.0.1:8012", &grpcsample.Server{Name: "r1"})
	h.platform.set(rev("greeter", 0, Replica{Address: "10.0.0.1:8012", Ready: true}))
	select {
	case r := <-res:
		if r.err != nil || r.got != "hello, again" {
			t.Fatalf("Hello after an unreachable replica = %q, %v; want it answered by the next one", r.got, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Hello did not return within 10s")
	}
}

// A waiting stream counts, in the queue's byte bounds, what it holds: its
// header fields and the body window the server takes in before anyone
// reads it (before, a flat 8 KiB, while a stream could hold 500 KiB of
// headers and a 1 MiB window).
func TestGRPCWaitingStreamCost(t *testing.T) {
	h := newHarness(t, nil, rev("greeter", 0))
	cc := h.grpcClient("greeter.default")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "x-fat", strings.Repeat("f", 4<<10))
	go func() { _, _ = grpcsample.Hello(ctx, cc, "x") }()
	h.eventually("the call waiting", func() bool { return h.a.global.count.Load() == 1 })
	if got := h.a.global.bytes.Load(); got < 4<<10+streamWindow || got > 6<<10+streamWindow {
		t.Errorf("a waiting call with 4 KiB of metadata holds %d bytes in the queue's bound, want its fields and the "+
			"%d-byte window", got, streamWindow)
	}
	cancel()
	h.eventually("the call left the queue", func() bool { return h.a.global.bytes.Load() == 0 })
}

// TestGRPCNotSent: a replica's queue-proxy proves a call never reached its
// app (the app refused the connection). A call's message was read on its
// way, so it cannot go to another replica: UNAVAILABLE saying it reached
// no app (a gRPC client may retry it), never the replica's own answer;
// the proof is not passed on, and the replica is out of rotation. A
// forged proof is the replica's answer.
func TestGRPCNotSent(t *testing.T) {
	const secret = "install-secret-0123456789"
	m, err := stats.NewProxyMarker(stats.NamespaceProxySecret(secret, "default"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, value, want string
	}{
		{"the proof", string(m.NotSent()), "it did not reach any app"},
		{"a forged proof", "yes", "the app cannot be reached"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(o *Options) { o.ProxySecret = secret }, rev("greeter", 0, Replica{Address: "10.0.0.1:8012", Ready: true}))
			refuse := func(ctx context.Context, _ any, _ *grpc.UnaryServerInfo, _ grpc.UnaryHandler) (any, error) {
				_ = grpc.SetHeader(ctx, metadata.Pairs(strings.ToLower(stats.NotSentHeaderName), tc.value))
				return nil, status.Error(codes.Unavailable, "the app cannot be reached")
			}
			g := grpc.NewServer(grpc.UnaryInterceptor(refuse))
			grpcsample.Register(g, &grpcsample.Server{Name: "r1"})
			ln := h.net.listen("10.0.0.1:8012")
			go func() { _ = g.Serve(ln) }()
			t.Cleanup(g.Stop)
			var header, trailer metadata.MD // a Trailers-Only answer's fields are the trailer
			_, err := grpcsample.Hello(bounded(t), h.grpcClient("greeter.default"), "x", grpc.Header(&header), grpc.Trailer(&trailer))
			if status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), tc.want) {
				t.Errorf("Hello = %v, want UNAVAILABLE saying %q", err, tc.want)
			}
			if v := append(header.Get(stats.NotSentHeaderName), trailer.Get(stats.NotSentHeaderName)...); len(v) > 0 {
				t.Errorf("the proof reached the client: %q", v)
			}
			if tc.value == string(m.NotSent()) {
				h.eventually("the replica out of rotation", func() bool {
					return len(h.a.routes.Load().byKey["default/greeter"].throttle.set.Load().replicas) == 0
				})
			}
		})
	}
}
