package activator

import (
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestBusyPollEndToEnd: with BusyPoll set, a request over TCP through the
// activator to a TCP replica is served, and both the client's and the
// replica's connections polled.
func TestBusyPollEndToEnd(t *testing.T) {
	app, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("hello") }}
	go srv.Serve(app)                    //nolint:errcheck
	t.Cleanup(func() { srv.Shutdown() }) //nolint:errcheck
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(o *Options) { o.Listener = ln; o.BusyPoll = 5 * time.Millisecond; o.Dial = nil },
		rev("hello", 0, Replica{Address: app.Addr().String(), Ready: true}))
	client := &fasthttp.HostClient{Addr: ln.Addr().String()}
	for range 20 {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI("http://hello.default/")
		if err := client.DoTimeout(req, resp, 5*time.Second); err != nil || resp.StatusCode() != 200 || string(resp.Body()) != "hello" {
			t.Fatalf("request: %v, %d %q", err, resp.StatusCode(), resp.Body())
		}
	}
	if s, hits := h.a.poll.Stats(); s == 0 || hits == 0 {
		t.Errorf("spins %d, hits %d: the connections did not poll", s, hits)
	}
}
