package queueproxy

import (
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"
)

var helloBody = []byte("hello\n")

func helloApp(ctx *fasthttp.RequestCtx) { ctx.SetBody(helloBody) }

// benchClient sends GET / through the proxy (or to whatever ln serves) in
// a loop; 0 allocs/op means none anywhere on the path: client, proxy, app.
func benchClient(b *testing.B, ln *fasthttputil.InmemoryListener) {
	client := &fasthttp.HostClient{Addr: "bench", Dial: func(string) (net.Conn, error) { return ln.Dial() }, ReadTimeout: 10 * time.Second}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	req.SetRequestURI("http://bench/")
	b.ReportAllocs()
	for b.Loop() {
		if err := client.Do(req, resp); err != nil || resp.StatusCode() != 200 {
			b.Fatalf("status %d, err %v", resp.StatusCode(), err)
		}
	}
}

// BenchmarkProxy is the whole hot path with containerConcurrency 0: probe
// check, accounting, forwarding headers, the hop, latency histogram.
func BenchmarkProxy(b *testing.B) {
	app := startApp(b, helloApp)
	r := newRig(b, testConfig(b, nil), app)
	benchClient(b, servingListenerT(b, r))
}

// BenchmarkProxyBreaker adds the breaker (containerConcurrency 10).
func BenchmarkProxyBreaker(b *testing.B) {
	app := startApp(b, helloApp)
	r := newRig(b, testConfig(b, func(c *Config) { c.ContainerConcurrency = 10 }), app)
	benchClient(b, servingListenerT(b, r))
}

// BenchmarkBaselineProxy is the floor: fasthttp's HostClient.Do between
// the same server and app, as in bench/queueproxy/baseline.
func BenchmarkBaselineProxy(b *testing.B) {
	app := startApp(b, helloApp)
	hc := &fasthttp.HostClient{Addr: "app", Dial: func(string) (net.Conn, error) { return app.Dial() }}
	ln := fasthttputil.NewInmemoryListener()
	s := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if err := hc.Do(&ctx.Request, &ctx.Response); err != nil {
			ctx.Error(err.Error(), fasthttp.StatusBadGateway)
		}
	}}
	go func() { _ = s.Serve(ln) }()
	b.Cleanup(func() { _ = s.Shutdown() })
	benchClient(b, ln)
}

// BenchmarkDirect is the client and the app alone.
func BenchmarkDirect(b *testing.B) {
	benchClient(b, startApp(b, helloApp))
}
