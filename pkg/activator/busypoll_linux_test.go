package activator

import (
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestBusyPollEndToEnd: with BusyPoll set, a request over TCP through the
// activator to a TCP replica is served, and the connections poll.
func TestBusyPollEndToEnd(t *testing.T) {
	app, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("hello") }}
	go srv.Serve(app)
	t.Cleanup(func() { srv.Shutdown() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(o *Options) { o.Listener = ln; o.BusyPoll = time.Millisecond; o.Dial = nil },
		rev("hello", 0, Replica{Address: app.Addr().String(), Ready: true}))
	client := &fasthttp.HostClient{Addr: ln.Addr().String()}
	for range 20 {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI("http://hello.default/")
		if err := client.DoTimeout(req, resp, 5*time.Second); err != nil || resp.StatusCode() != 200 || string(resp.Body()) != "hello" {
			t.Fatalf("request: %v, %d %q", err, resp.StatusCode(), resp.Body())
		}
	}
	// Whether a poll got its data depends on timing (the race detector
	// slows the replica past any budget); pkg/proxy/busypoll's tests check the
	// reads themselves. Here: the activator's connections do poll.
	if spins, _ := h.a.poll.Stats(); spins == 0 {
		t.Errorf("no read polled: the activator's connections are not wrapped")
	}
}
