//go:build linux

package activator

import (
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// blackHole is a TCP address whose SYNs nobody answers, as a pod address
// whose SYN is lost or dropped: a listener with a backlog of 0 (one
// connection) whose accept queue is full and never accepted, so the
// kernel drops every further SYN and a connect to it waits for the SYN
// retries (about 127 s).
func blackHole(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	filler, err := net.DialTimeout("tcp", addr, time.Second) // fills the accept queue
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { filler.Close() })
	if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
		c.Close()
		t.Skip("this kernel answered a SYN on a full accept queue; no black hole to test with")
	}
	return addr
}

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
	hole, good := blackHole(t), tcpBackend(t, "good")
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
