//go:build linux

package activator

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"ebb.dev/ebb/internal/grpcsample"
	"ebb.dev/ebb/internal/testnet"
)

// tcpBackend starts a fake replica on a loopback TCP port.
func tcpBackend(t *testing.T, name string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &backend{name: name}
	b.ready.Store(true)
	b.server = &fasthttp.Server{Handler: b.serve}
	go b.server.Serve(ln)
	t.Cleanup(func() { b.server.Shutdown() })
	return ln.Addr().String()
}

// TestConnectTimeout: a request whose replica never answers its SYN is
// not held for the kernel's SYN retries (nor until its own timeout): the
// connect gives up after ConnectTimeout, the replica is taken out of
// rotation, and the request, of which nothing was sent, goes to another
// replica. The connect is logged at Warning and counted, and so is the
// slow request, with the stage its time went to.
func TestConnectTimeout(t *testing.T) {
	hole, good := testnet.BlackHole(t), tcpBackend(t, "good")
	core, logs := observer.New(zapcore.WarnLevel)
	h := newHarness(t, func(o *Options) {
		o.Dial, o.Logger = nil, zap.New(core) // real TCP to the replicas
		o.ConnectTimeout, o.SlowRequest, o.ProbeTimeout = 200*time.Millisecond, 100*time.Millisecond, 50*time.Millisecond
	}, rev("hello", 1, Replica{Address: hole, Ready: true}))
	got := make(chan string, 1)
	go func() {
		status, body, resp := h.do("hello.localhost", nil)
		got <- fmt.Sprintf("%d %s %s", status, resp.Header.Peek("X-Replica"), body)
	}()
	h.eventually("the request admitted", func() bool { return h.a.open.Load() == 1 })
	// The request holds the black hole's slot (connecting, or about to);
	// the revision gets a replica that answers.
	h.platform.set(rev("hello", 1, Replica{Address: hole, Ready: true}, Replica{Address: good, Ready: true}))
	if g, want := <-got, "200 good hello from good"; g != want {
		t.Errorf("got %q, want %q (the request's timeout is 5s: a 504 means the connect waited for it)", g, want)
	}
	if n := testutil.ToFloat64(h.a.metrics.connectTimeouts); n != 1 {
		t.Errorf("ebb_activator_connect_timeouts_total = %v, want 1", n)
	}
	if n := testutil.ToFloat64(h.a.metrics.slow[stageUpstream]); n != 1 {
		t.Errorf("slow requests at stage upstream = %v, want 1", n)
	}
	timedOut := logs.FilterMessageSnippet("connecting to a replica timed out").FilterField(zap.String("address", hole))
	slow := logs.FilterMessage("slow request").FilterField(zap.String("stage", "upstream")).FilterField(zap.String("replica", good))
	if timedOut.Len() != 1 || slow.Len() != 1 {
		t.Errorf("want one Warning for the connect (got %d) and one for the slow request at stage upstream, to the good replica "+
			"(got %d); all: %v", timedOut.Len(), slow.Len(), logs.All())
	}
}

// TestConnectTimeoutHTTP2: the same for a gRPC call (the HTTP/2 hop has
// its own transport, bounded by the same ConnectTimeout).
func TestConnectTimeoutHTTP2(t *testing.T) {
	hole := testnet.BlackHole(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	grpcsample.Register(g, &grpcsample.Server{Name: "good"})
	go func() { _ = g.Serve(ln) }()
	t.Cleanup(g.Stop)
	good := ln.Addr().String()
	h := newHarness(t, func(o *Options) {
		o.Dial, o.ConnectTimeout, o.ProbeTimeout = nil, 200*time.Millisecond, 50*time.Millisecond
	}, rev("greeter", 1, Replica{Address: hole, Ready: true}))
	cc := h.grpcClient("greeter.default")
	type result struct {
		got string
		err error
	}
	res := make(chan result, 1)
	var trailer metadata.MD
	go func() {
		got, err := grpcsample.Hello(bounded(t), cc, "x", grpc.Trailer(&trailer))
		res <- result{got, err}
	}()
	h.eventually("the call admitted", func() bool { return h.a.open.Load() == 1 })
	h.platform.set(rev("greeter", 1, Replica{Address: hole, Ready: true}, Replica{Address: good, Ready: true}))
	if r := <-res; r.err != nil || r.got != "hello, x" || fmt.Sprint(trailer.Get(grpcsample.TrailerServedBy)) != "[good]" {
		t.Errorf("got %q, %v, served by %v; want the good replica's answer (the call's timeout is 5s: DEADLINE_EXCEEDED means "+
			"the connect waited for it)", r.got, r.err, trailer.Get(grpcsample.TrailerServedBy))
	}
	if n := testutil.ToFloat64(h.a.metrics.connectTimeouts); n != 1 {
		t.Errorf("ebb_activator_connect_timeouts_total = %v, want 1", n)
	}
}
