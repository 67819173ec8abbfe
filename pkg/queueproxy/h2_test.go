package queueproxy

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"ebb.dev/ebb/internal/grpcsample"
	"ebb.dev/ebb/internal/testnet"
	"ebb.dev/ebb/pkg/proxy/h2c"
	"ebb.dev/ebb/pkg/stats"
)

// grpcApp serves the sample Greeter (and the health service) on
// 127.0.0.1 until the test ends; it returns the port.
func grpcApp(t *testing.T, s *grpcsample.Server) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	grpcsample.Register(g, s)
	healthpb.RegisterHealthServer(g, health.NewServer())
	go func() { _ = g.Serve(ln) }()
	t.Cleanup(g.Stop)
	return ln.Addr().(*net.TCPAddr).Port
}

// runningProxy is a queue-proxy run by Run on 127.0.0.1, in front of the
// app on appPort.
type runningProxy struct {
	q    *QueueProxy
	addr string
	stop context.CancelFunc
	done chan error
}

func runProxy(t *testing.T, appPort int, edit func(*Config)) *runningProxy {
	t.Helper()
	c := testConfig(t, func(c *Config) {
		c.UserPort, c.DrainPeriod, c.ProbePeriod = appPort, 0, 20*time.Millisecond
		if edit != nil {
			edit(c)
		}
	})
	q, err := New(c, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	serving, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	admin, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningProxy{q: q, addr: serving.Addr().String(), stop: cancel, done: make(chan error, 1)}
	go func() { r.done <- q.Run(ctx, Listeners{Serving: serving, Admin: admin}) }()
	t.Cleanup(func() { cancel(); r.wait(t) })
	waitUntil(t, q.ready.ready)
	return r
}

// wait waits for Run to return (once), with a bound.
func (r *runningProxy) wait(t *testing.T) error {
	t.Helper()
	select {
	case err, ok := <-r.done:
		if ok {
			close(r.done)
		}
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return within 20s")
		return nil
	}
}

// dialGRPC is a gRPC client (h2c, prior knowledge) to addr.
func dialGRPC(t *testing.T, addr string) *grpc.ClientConn { return testnet.GRPCClient(t, addr) }

func callCtx(t *testing.T) context.Context { return testnet.Within(t, 20*time.Second) }

func TestGRPCUnaryAndStreaming(t *testing.T) {
	r := runProxy(t, grpcApp(t, &grpcsample.Server{Name: "replica-1"}), nil)
	cc := dialGRPC(t, r.addr)
	ctx := callCtx(t)

	var trailer metadata.MD
	got, err := grpcsample.Hello(ctx, cc, "ebb", grpc.Trailer(&trailer))
	if err != nil {
		t.Fatalf("Hello: %v", err)
	}
	if got != "hello, ebb" || trailer.Get(grpcsample.TrailerServedBy)[0] != "replica-1" {
		t.Errorf("Hello = %q, trailer %v; want hello, ebb and served by replica-1", got, trailer)
	}
	nums, err := grpcsample.Count(ctx, cc, 5, grpc.Trailer(&trailer))
	if err != nil {
		t.Fatalf("Count: %v", err)
	}
	if diff := cmp.Diff([]uint32{1, 2, 3, 4, 5}, nums); diff != "" {
		t.Errorf("Count (-want +got):\n%s", diff)
	}
	hc, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || hc.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health Check = %v, %v; want SERVING", hc, err)
	}
	waitUntil(t, func() bool { return r.q.proxy.acct.InFlight() == 0 })
	if got := finishedRequests(t, r.q); got != 3 {
		t.Errorf("requests finished = %d, want 3 (one per stream)", got)
	}
}

func TestGRPCDeadlineExceeded(t *testing.T) {
	gate := make(chan struct{})
	defer close(gate)
	r := runProxy(t, grpcApp(t, &grpcsample.Server{Gate: gate}), nil)
	cc := dialGRPC(t, r.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := grpcsample.Hello(ctx, cc, "late")
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("Hello past its deadline: %v, want DeadlineExceeded", err)
	}
	waitUntil(t, func() bool { return r.q.proxy.acct.InFlight() == 0 })
}

// With CONTAINER_CONCURRENCY=1, a server-streaming call holds the slot for
// its life: a second call waits in the breaker until its grpc-timeout
// (DEADLINE_EXCEEDED from the queue-proxy, never reaching the app), and
// once the first is cancelled the slot is free again.
func TestGRPCStreamHoldsSlotUntilCancelled(t *testing.T) {
	gate := make(chan struct{})
	r := runProxy(t, grpcApp(t, &grpcsample.Server{Gate: gate}), func(c *Config) { c.ContainerConcurrency = 1 })
	cc := dialGRPC(t, r.addr)

	holdCtx, cancelHold := context.WithCancel(context.Background())
	defer cancelHold()
	held := make(chan error, 1)
	go func() { _, err := grpcsample.Count(holdCtx, cc, 3); held <- err }()
	waitUntil(t, func() bool { return r.q.proxy.breaker.InFlight() == 1 })

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := grpcsample.Hello(ctx, cc, "queued"); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("Hello behind a held slot: %v, want DeadlineExceeded", err)
	}
	cancelHold()
	select {
	case err := <-held:
		if status.Code(errors.Unwrap(err)) != codes.Canceled && status.Code(err) != codes.Canceled {
			t.Errorf("cancelled Count: %v, want Canceled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("cancelled Count did not end within 20s")
	}
	waitUntil(t, func() bool { return r.q.proxy.breaker.InFlight() == 0 && r.q.proxy.acct.InFlight() == 0 })
	close(gate)
	if got, err := grpcsample.Hello(callCtx(t), cc, "next"); err != nil || got != "hello, next" {
		t.Errorf("Hello after the slot was freed = %q, %v", got, err)
	}
}

// SIGTERM with a stream in flight: the queue-proxy stops taking
// connections, sends GOAWAY, lets the stream finish, then Run returns.
func TestGRPCDrainFinishesStreamInFlight(t *testing.T) {
	gate := make(chan struct{})
	r := runProxy(t, grpcApp(t, &grpcsample.Server{Gate: gate}), nil)
	cc := dialGRPC(t, r.addr)
	type result struct {
		nums []uint32
		err  error
	}
	res := make(chan result, 1)
	ctx := callCtx(t)
	go func() { n, err := grpcsample.Count(ctx, cc, 2); res <- result{n, err} }()
	waitUntil(t, func() bool { return r.q.proxy.acct.InFlight() == 1 })

	r.stop()
	waitUntil(t, func() bool { // the listener is closed: new connections are refused
		c, err := net.DialTimeout("tcp", r.addr, time.Second)
		if err == nil {
			_ = c.Close()
		}
		return err != nil
	})
	select {
	case err := <-r.done:
		t.Fatalf("Run returned (%v) with a stream in flight", err)
	default:
	}
	close(gate)
	select {
	case got := <-res:
		if got.err != nil || len(got.nums) != 2 {
			t.Errorf("Count during the drain = %v, %v; want [1 2], nil", got.nums, got.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the stream in flight did not finish within 20s")
	}
	if err := r.wait(t); err != nil {
		t.Errorf("Run: %v", err)
	}
}

// A malformed preface, or a garbage frame after a good one, is answered by
// a connection error (the connection closes) and harms no other
// connection; HTTP/1.1 on the same port still works.
func TestH2MalformedConnections(t *testing.T) {
	r := runProxy(t, grpcApp(t, &grpcsample.Server{Name: "r"}), nil)
	cc := dialGRPC(t, r.addr)
	ctx := callCtx(t)
	if _, err := grpcsample.Hello(ctx, cc, "before"); err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{
		"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n",                       // a bad preface
		h2c.Preface + "\x00\x00\x04\x09\x00\x00\x00\x00\x01junk", // CONTINUATION out of place
		"PRI", // too short, then closed
	} {
		c, err := net.DialTimeout("tcp", r.addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, raw); err != nil {
			t.Fatal(err)
		}
		if raw == "PRI" {
			_ = c.(*net.TCPConn).CloseWrite()
		}
		if _, err := io.Copy(io.Discard, c); err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("%q: the connection was not closed: %v", raw, err)
		}
		_ = c.Close()
	}
	if got, err := grpcsample.Hello(ctx, cc, "after"); err != nil || got != "hello, after" {
		t.Errorf("Hello on the good connection after the bad ones = %q, %v", got, err)
	}
	// HTTP/1.1 on the same port, same process.
	c, err := net.DialTimeout("tcp", r.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nK-Network-Probe: queue\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := io.ReadAtLeast(c, buf, len("HTTP/1.1 200"))
	if got := string(buf[:n]); len(got) < 12 || got[:12] != "HTTP/1.1 200" {
		t.Errorf("HTTP/1.1 probe on the serving port: %q, want a 200", got)
	}
}

// Many concurrent unary calls on one connection: each stream is a request.
func TestGRPCConcurrentStreamsCounted(t *testing.T) {
	r := runProxy(t, grpcApp(t, &grpcsample.Server{Name: "r"}), func(c *Config) { c.ContainerConcurrency = 4 })
	cc := dialGRPC(t, r.addr)
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	ctx := callCtx(t)
	for i := range n {
		wg.Go(func() {
			want := "hello, " + strconv.Itoa(i)
			if got, err := grpcsample.Hello(ctx, cc, strconv.Itoa(i)); err != nil || got != want {
				errs <- errors.Join(err, errors.New(got))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	waitUntil(t, func() bool { return r.q.proxy.acct.InFlight() == 0 })
	if got := finishedRequests(t, r.q); got != n {
		t.Errorf("requests finished = %d, want %d", got, n)
	}
}

// REVISION_RESPONSE_START_TIMEOUT_SECONDS bounds a stream's wait for the
// app's first byte, as on HTTP/1.1: a gRPC call without a deadline of its
// own gets DEADLINE_EXCEEDED naming the setting, and is counted a timeout.
func TestGRPCResponseStartTimeout(t *testing.T) {
	gate := make(chan struct{})
	defer close(gate)
	r := runProxy(t, grpcApp(t, &grpcsample.Server{Gate: gate}), func(c *Config) {
		c.ResponseStartTimeout = 200 * time.Millisecond
	})
	cc := dialGRPC(t, r.addr)
	_, err := grpcsample.Hello(callCtx(t), cc, "slow")
	if st := status.Convert(err); st.Code() != codes.DeadlineExceeded ||
		!strings.Contains(st.Message(), "REVISION_RESPONSE_START_TIMEOUT_SECONDS") {
		t.Fatalf("Hello past the response start timeout: %v, want DeadlineExceeded naming the setting", err)
	}
	waitUntil(t, func() bool { return r.q.proxy.acct.InFlight() == 0 })
	if got := testutil.ToFloat64(r.q.proxy.metrics.timeouts); got != 1 {
		t.Errorf("timeouts counted = %v, want 1", got)
	}
}

// finishedRequests is the number of requests ebb_queue_request_duration_seconds
// has observed (the reporter resets the accounting's counts every second,
// so tests read the histogram).
func finishedRequests(t *testing.T, q *QueueProxy) int {
	t.Helper()
	mfs, err := q.proxy.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		if mf.GetName() == "ebb_queue_request_duration_seconds" {
			for _, m := range mf.GetMetric() {
				n += int(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return n
}

// TestGRPCAppRefused: the app is gone; a call is answered UNAVAILABLE
// saying it did not reach the app, readiness fails at once (the probe
// period is 300 s), and only a call carrying the activator's armed
// marker gets the proof of it.
func TestGRPCAppRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	grpcsample.Register(g, &grpcsample.Server{Name: "r1"})
	go func() { _ = g.Serve(ln) }()
	r := runProxy(t, ln.Addr().(*net.TCPAddr).Port, func(c *Config) { c.ProbePeriod, c.ProbeFailureThreshold = 300*time.Second, 3 })
	g.Stop() // the app died
	proof, _ := stats.NewProxyMarker(testProxySecret)
	cc := dialGRPC(t, r.addr)
	for _, tc := range []struct {
		name, marker string
		wantProof    bool
	}{
		{"through the activator", testMarker, true},
		{"direct", "", false},
		{"forged marker", "activator test-secret-0123456788", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := callCtx(t)
			if tc.marker != "" {
				ctx = metadata.AppendToOutgoingContext(ctx, strings.ToLower(stats.ProxyHeaderName), tc.marker)
			}
			var header, trailer metadata.MD // a Trailers-Only answer's fields are the trailer
			_, err := grpcsample.Hello(ctx, cc, "x", grpc.Header(&header), grpc.Trailer(&trailer))
			if status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), "did not reach it") {
				t.Errorf("Hello = %v, want UNAVAILABLE saying it did not reach the app", err)
			}
			got := append(header.Get(stats.NotSentHeaderName), trailer.Get(stats.NotSentHeaderName)...)
			if tc.wantProof && (len(got) != 1 || got[0] != string(proof.NotSent())) || !tc.wantProof && len(got) > 0 {
				t.Errorf("%s = %q, want the proof: %v", stats.NotSentHeaderName, got, tc.wantProof)
			}
			if r.q.ready.ready() {
				t.Error("still ready after the app refused a connection")
			}
		})
	}
}
