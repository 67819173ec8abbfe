package activator

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"
)

// BenchmarkProxy measures the warm path through the activator (one ready
// replica, unlimited capacity) over in-memory connections, beside
// BenchmarkProxyBaseline, a bare fasthttp proxy doing HostClient.Do over
// the same network. The difference is the activator's own cost.
func BenchmarkProxy(b *testing.B) {
	n := &network{lns: map[string]*fasthttputil.InmemoryListener{}}
	startEcho(b, n, "r1:80")
	a, err := New(withDefaults(Options{Listener: n.listen("activator:80"),
		Platform: newFakePlatform(rev("hello", 0, Replica{Address: "r1:80", Ready: true})), Dial: n.dial}))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for !a.Ready() {
		time.Sleep(time.Millisecond)
	}
	benchClient(b, n, "activator:80")
}

func BenchmarkProxyBaseline(b *testing.B) {
	n := &network{lns: map[string]*fasthttputil.InmemoryListener{}}
	startEcho(b, n, "r1:80")
	hc := &fasthttp.HostClient{Addr: "r1:80", Dial: n.dial, MaxConns: 4096}
	s := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if err := hc.Do(&ctx.Request, &ctx.Response); err != nil {
			ctx.Error(err.Error(), 502)
		}
	}}
	go s.Serve(n.listen("proxy:80"))
	defer s.Shutdown()
	benchClient(b, n, "proxy:80")
}

func startEcho(b *testing.B, n *network, addr string) {
	s := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("hello") }}
	go s.Serve(n.listen(addr))
	b.Cleanup(func() { s.Shutdown() })
}

func benchClient(b *testing.B, n *network, addr string) {
	c := &fasthttp.HostClient{Addr: addr, Dial: n.dial, MaxConns: 4096}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI("http://hello.default/")
		for pb.Next() {
			if err := c.Do(req, resp); err != nil || resp.StatusCode() != 200 {
				b.Errorf("request: %v %d", err, resp.StatusCode())
				return
			}
		}
	})
}

// BenchmarkProxyTCP and BenchmarkProxyTCPBaseline are the same pair over
// loopback TCP, where syscalls dominate; besides ns/op they report the
// whole process's CPU per request (client, proxy and app together), so
// the difference between the two is the activator's own CPU.
func BenchmarkProxyTCP(b *testing.B) {
	app := startTCP(b, func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("hello") })
	ln := listenTCP(b)
	a, err := New(withDefaults(Options{Listener: ln, Platform: newFakePlatform(rev("hello", 0, Replica{Address: app, Ready: true}))}))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for !a.Ready() {
		time.Sleep(time.Millisecond)
	}
	benchTCPClient(b, ln.Addr().String())
}

func BenchmarkProxyTCPBaseline(b *testing.B) {
	app := startTCP(b, func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("hello") })
	hc := &fasthttp.HostClient{Addr: app, MaxConns: 4096}
	proxy := startTCP(b, func(ctx *fasthttp.RequestCtx) {
		if err := hc.Do(&ctx.Request, &ctx.Response); err != nil {
			ctx.Error(err.Error(), 502)
		}
	})
	benchTCPClient(b, proxy)
}

func listenTCP(b *testing.B) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	return ln
}

func startTCP(b *testing.B, h fasthttp.RequestHandler) string {
	ln := listenTCP(b)
	s := &fasthttp.Server{Handler: h}
	go s.Serve(ln)
	b.Cleanup(func() { s.Shutdown() })
	return ln.Addr().String()
}

func benchTCPClient(b *testing.B, addr string) {
	c := &fasthttp.HostClient{Addr: addr, MaxConns: 64}
	var r0, r1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI("http://hello.default/")
		for pb.Next() {
			if err := c.Do(req, resp); err != nil || resp.StatusCode() != 200 {
				b.Errorf("request: %v %d", err, resp.StatusCode())
				return
			}
		}
	})
	syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	cpu := time.Duration(r1.Utime.Nano() + r1.Stime.Nano() - r0.Utime.Nano() - r0.Stime.Nano())
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/op")
}

// BenchmarkTakeRelease is the throttle's fast path, per request.
func BenchmarkTakeRelease(b *testing.B) {
	for _, p := range []LoadBalancing{lbPowerOfTwo, lbFirstAvailable, LBRoundRobin} {
		b.Run(p.String(), func(b *testing.B) {
			th := newThrottle(testLimits(), &budget{maxCount: 1, maxBytes: 1}, time.Now)
			s := replicas(0, "a", "b", "c", "d")
			s.policy = p
			th.setReplicas(s)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					th.release(th.take())
				}
			})
		})
	}
}

func BenchmarkAppendKey(b *testing.B) {
	rules := HostRules{ClusterDomain: "cluster.local", LocalDomain: "localhost", LocalNamespace: "default"}
	buf := make([]byte, 0, 512)
	host := []byte("hello.prod.svc.cluster.local:8080")
	b.ReportAllocs()
	for b.Loop() {
		rules.appendKey(buf[:0], host)
	}
}
