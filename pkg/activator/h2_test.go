package activator

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"ebb.dev/ebb/internal/grpcsample"
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
	cc, err := grpc.NewClient("passthrough:///activator:80",
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithAuthority(host),
		grpc.WithContextDialer(func(context.Context, string) (net.Conn, error) { return h.net.dial("activator:80") }))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = cc.Close() })
	return cc
}

func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

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
