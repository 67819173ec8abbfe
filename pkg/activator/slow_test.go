package activator

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestSlowRequestQueued: a request that waited for its revision's first
// replica longer than SlowRequest is logged at Warning with stage queued
// and counted; a quick one on the same activator is not.
func TestSlowRequestQueued(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	const bound = 50 * time.Millisecond
	h := newHarness(t, func(o *Options) { o.Logger, o.SlowRequest = zap.New(core), bound }, rev("hello", 1))
	got := make(chan int, 1)
	start := time.Now()
	go func() {
		status, _, _ := h.do("hello.localhost", nil)
		got <- status
	}()
	h.eventually("the request queued, past the bound", func() bool {
		return h.a.routes.Load().byKey["default/hello"].throttle.waiting.Load() == 1 && time.Since(start) > 2*bound
	})
	h.backend("10.0.0.1:8012", true)
	h.platform.set(rev("hello", 1, Replica{Address: "10.0.0.1:8012", Ready: true}))
	if status := <-got; status != 200 {
		t.Fatalf("status %d, want 200", status)
	}
	if status, _, _ := h.do("hello.localhost", nil); status != 200 { // quick: not slow
		t.Fatalf("status %d, want 200", status)
	}
	slow := logs.FilterMessage("slow request")
	if slow.Len() != 1 || slow.FilterField(zap.String("stage", "queued")).FilterField(zap.String("replica", "10.0.0.1:8012")).Len() != 1 {
		t.Errorf("want one slow request at stage queued, to 10.0.0.1:8012; got %v", slow.All())
	}
	if n := testutil.ToFloat64(h.a.metrics.slow[stageQueued]); n != 1 {
		t.Errorf("slow requests at stage queued = %v, want 1", n)
	}
	if e := slow.All(); len(e) == 1 {
		// The test waited 2*bound from before the request was sent; the
		// activator counts from when it took the request, a little later.
		if q := e[0].ContextMap()["queued"].(time.Duration); q < bound {
			t.Errorf("queued %v, want at least %v", q, bound)
		}
	}
}
