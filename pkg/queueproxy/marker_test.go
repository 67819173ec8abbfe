package queueproxy

import (
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// BenchmarkProxyMarked is BenchmarkProxy with the activator's marker on
// every request: the constant-time check and the strip before the app
// allocate nothing either.
func BenchmarkProxyMarked(b *testing.B) {
	app := startApp(b, helloApp)
	r := newRig(b, testConfig(b, nil), app)
	ln := servingListenerT(b, r)
	client := &fasthttp.HostClient{Addr: "bench", Dial: func(string) (net.Conn, error) { return ln.Dial() }, ReadTimeout: 10 * time.Second}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	req.SetRequestURI("http://bench/")
	b.ReportAllocs()
	for b.Loop() {
		req.Header.Set("K-Proxy-Request", testMarker) // the proxy stripped it from the copy it forwarded, not from req
		if err := client.Do(req, resp); err != nil || resp.StatusCode() != 200 {
			b.Fatalf("status %d, err %v", resp.StatusCode(), err)
		}
	}
	if n := r.q.proxy.acct.Report(time.Now()).ProxiedRequestCount; n == 0 {
		b.Errorf("no request counted as proxied")
	}
}
