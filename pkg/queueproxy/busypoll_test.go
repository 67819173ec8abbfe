package queueproxy

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestBusyPoll: over TCP, with busy polling on, requests are served,
// the connections polled, and the open-request count that gates polling returns
// to zero.
func TestBusyPoll(t *testing.T) {
	appPort, _ := serveTCP(t, testApp)
	if c := testConfig(t, nil); c.BusyPoll != 100*time.Microsecond {
		t.Fatalf("default busy poll %v, want 100us", c.BusyPoll)
	}
	// A long budget (the race detector is slow); no drain period.
	c := testConfig(t, func(c *Config) { c.UserPort, c.BusyPoll, c.DrainPeriod = appPort, 5*time.Millisecond, 0 })
	q, serving, _, cancel, runErr := runTCP(t, c)
	defer func() {
		cancel()
		if err := <-runErr; err != nil {
			t.Errorf("Run = %v", err)
		}
	}()
	client := &fasthttp.HostClient{Addr: serving.Addr().String()}
	for range 50 {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI("http://" + serving.Addr().String() + "/")
		if err := client.DoTimeout(req, resp, 5*time.Second); err != nil || resp.StatusCode() != 200 {
			t.Fatalf("request: %v, %d", err, resp.StatusCode())
		}
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
	}
	// Whether a poll got its data depends on timing; pkg/proxy/busypoll's tests
	// check the reads themselves. Here: the connections do poll.
	if spins, _ := q.proxy.poll.Stats(); spins == 0 {
		t.Errorf("no read polled: the queue-proxy's connections are not wrapped")
	}
	waitUntil(t, func() bool { return q.proxy.open.Load() == 0 })
}
