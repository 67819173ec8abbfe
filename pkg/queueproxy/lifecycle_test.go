package queueproxy

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/stats"
)

func TestProbeState(t *testing.T) {
	tests := []struct {
		name        string
		results     []bool
		wantReady   []bool
		wantChanged []bool
	}{
		{name: "first success makes ready", results: []bool{false, false, true},
			wantReady: []bool{false, false, true}, wantChanged: []bool{false, false, true}},
		{name: "threshold failures make not ready", results: []bool{true, false, false, false},
			wantReady: []bool{true, true, true, false}, wantChanged: []bool{true, false, false, true}},
		{name: "a success resets the count", results: []bool{true, false, false, true, false, false},
			wantReady: []bool{true, true, true, true, true, true}, wantChanged: []bool{true, false, false, false, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := probeState{threshold: 3}
			var ready, changed []bool
			for _, ok := range tt.results {
				changed = append(changed, s.observe(ok))
				ready = append(ready, s.ready)
			}
			if diff := cmp.Diff([][]bool{tt.wantReady, tt.wantChanged}, [][]bool{ready, changed}); diff != "" {
				t.Errorf("ready, changed (-want +got):\n%s", diff)
			}
		})
	}
}

// serveTCP serves h on 127.0.0.1 until the test ends; it returns the port.
func serveTCP(t *testing.T, h fasthttp.RequestHandler) (int, *fasthttp.Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fasthttp.Server{Handler: h, Logger: quietLogger{}}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Shutdown() })
	return ln.Addr().(*net.TCPAddr).Port, s
}

func runProber(t *testing.T, port int, edit func(*Config)) *readiness {
	t.Helper()
	c := testConfig(t, func(c *Config) {
		c.UserPort, c.ProbePeriod, c.ProbeFailureThreshold = port, 20*time.Millisecond, 2
		if edit != nil {
			edit(c)
		}
	})
	ready := &readiness{}
	p := newProber(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), c, ready, zap.NewNop())
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { p.run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return ready
}

func TestHTTPProbe(t *testing.T) {
	var status atomic.Int64
	status.Store(500)
	port, _ := serveTCP(t, func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Path()) != "/ready" {
			ctx.SetStatusCode(404)
			return
		}
		ctx.SetStatusCode(int(status.Load()))
	})
	ready := runProber(t, port, func(c *Config) { c.ProbePath = "/ready" })
	if ready.ready() {
		t.Fatal("ready while the app answers 500")
	}
	status.Store(200)
	waitUntil(t, ready.ready)
	status.Store(503)
	waitUntil(t, func() bool { return !ready.ready() })
}

func TestTCPProbe(t *testing.T) {
	port, s := serveTCP(t, helloApp)
	ready := runProber(t, port, nil)
	waitUntil(t, ready.ready)
	_ = s.Shutdown() // closes the listener: connects fail
	waitUntil(t, func() bool { return !ready.ready() })
	ready.app.Store(true)
	ready.drain()
	if ready.ready() {
		t.Error("ready while draining")
	}
}

// TestDrain: on cancel (SIGTERM in main), readiness fails at once, the
// proxy keeps serving through the drain period (3s), requests longer than
// it (4s) still complete after the listener closed, Run returns nil, and
// the port then refuses connections.
func TestDrain(t *testing.T) {
	appPort, _ := serveTCP(t, testApp)
	c := testConfig(t, func(c *Config) { c.UserPort, c.DrainPeriod = appPort, 3*time.Second })
	q, serving, admin, cancel, runErr := runTCP(t, c)

	client := &fasthttp.Client{ReadTimeout: 20 * time.Second}
	get := func(addr net.Addr, path string, header ...string) (int, string) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI("http://" + addr.String() + path)
		if len(header) == 2 {
			req.Header.Set(header[0], header[1])
		}
		if err := client.Do(req, resp); err != nil {
			return 0, err.Error()
		}
		return resp.StatusCode(), string(resp.Body())
	}
	waitUntil(t, func() bool { s, _ := get(admin.Addr(), "/healthz"); return s == 200 })

	const n = 10
	statuses := make(chan int, n+1)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { s, _ := get(serving.Addr(), "/?sleep=4s"); statuses <- s })
	}
	waitUntil(t, func() bool { return q.proxy.acct.InFlight() == n })
	cancel()
	waitUntil(t, func() bool { s, _ := get(admin.Addr(), "/healthz"); return s == 503 })
	if s, body := get(serving.Addr(), "/", "K-Network-Probe", "queue"); s != 503 {
		t.Errorf("probe header while draining = %d %q, want 503", s, body)
	}
	if s, _ := get(serving.Addr(), "/"); s != 200 {
		t.Errorf("request during the drain period = %d, want 200 (still serving)", s)
	}
	if s, body := get(admin.Addr(), stats.KubeletProbePath); s != 200 {
		t.Errorf("the kubelet's probe while draining = %d %q, want 200 (no Warning Unhealthy for a pod doing what it should)", s, body)
	}
	// Past the drain period the serving port closes while the 4 s requests
	// finish: the kubelet's probe, on the admin port, still passes.
	waitUntil(t, func() bool {
		conn, err := net.DialTimeout("tcp", serving.Addr().String(), time.Second)
		if err == nil {
			conn.Close()
		}
		return err != nil
	})
	if s, body := get(admin.Addr(), stats.KubeletProbePath); s != 200 || q.proxy.acct.InFlight() == 0 {
		t.Errorf("the kubelet's probe with the serving port closed = %d %q (%d in flight), want 200 while requests finish", s, body,
			q.proxy.acct.InFlight())
	}
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != 200 {
			t.Errorf("in-flight request finished with %d, want 200", s)
		}
	}
	if err := <-runErr; err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if conn, err := net.DialTimeout("tcp", serving.Addr().String(), time.Second); err == nil {
		conn.Close()
		t.Error("serving port still accepts connections after the drain")
	}
}

// runTCP runs a queue-proxy for c on loopback TCP listeners; cancel starts
// its drain, and runErr gets what Run returned.
func runTCP(t *testing.T, c Config) (q *QueueProxy, serving, admin net.Listener, cancel context.CancelFunc, runErr <-chan error) {
	t.Helper()
	q, err := New(c, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if serving, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if admin, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- q.Run(ctx, Listeners{Serving: serving, Admin: admin}) }()
	return q, serving, admin, cancel, errc
}

// TestStopsJustAfterTheKubeletsProbe: once the app has stopped after the
// drain, a queue-proxy the kubelet probes waits for its next probe,
// answers it 200 and only then stops (the kubelet, which keeps probing a
// terminating pod until its kill returns, then has a whole period before
// its next probe); without a probe it stops after kubeletProbeWait. A
// queue-proxy never probed stops as soon as the app has.
func TestStopsJustAfterTheKubeletsProbe(t *testing.T) {
	for _, tc := range []struct {
		name   string
		probed bool // the kubelet probed it before the drain
		probe  bool // and probes again after the app stopped
	}{{"probed again", true, true}, {"not probed again", true, false}, {"never probed", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			appPort, app := serveTCP(t, testApp)
			c := testConfig(t, func(c *Config) { c.UserPort, c.DrainPeriod, c.AwaitAppExit = appPort, 0, 20*time.Second })
			_, _, admin, cancel, runErr := runTCP(t, c)
			probe := func() int { return statusOrZero(admin.Addr().String(), stats.KubeletProbePath) }
			healthy := func() bool { return statusOrZero(admin.Addr().String(), "/healthz") == 200 }
			if tc.probed {
				waitUntil(t, func() bool { return probe() == 200 })
			} else {
				waitUntil(t, healthy)
			}
			cancel()
			_ = app.Shutdown()
			stopped := time.Now()
			if !tc.probed {
				select {
				case err := <-runErr:
					if err != nil {
						t.Errorf("Run = %v, want nil", err)
					}
				case <-time.After(kubeletProbeWait):
					t.Fatalf("Run did not return within %v of the app's stop, never probed", kubeletProbeWait)
				}
				return
			}
			select {
			case err := <-runErr:
				t.Fatalf("Run returned (%v) %v after the app's stop, before the kubelet's next probe", err, time.Since(stopped))
			case <-time.After(300 * time.Millisecond):
			}
			probed := time.Now()
			if tc.probe {
				if s := probe(); s != 200 {
					t.Errorf("the kubelet's probe after the app's stop = %d, want 200", s)
				}
			}
			select {
			case err := <-runErr:
				if err != nil {
					t.Errorf("Run = %v, want nil", err)
				}
				if took := time.Since(stopped); !tc.probe && took < kubeletProbeWait {
					t.Errorf("Run returned %v after the app's stop with no probe, want at least %v", took, kubeletProbeWait)
				}
				if took := time.Since(probed); tc.probe && took >= kubeletProbeWait-300*time.Millisecond {
					t.Errorf("Run returned %v after the kubelet's probe, want at once (not at the bound)", took)
				}
			case <-time.After(kubeletProbeWait + 3*time.Second):
				t.Fatal("Run did not return after the kubelet's probe, or its bound")
			}
		})
	}
}

// TestDrainAwaitsTheApp: with QUEUE_AWAIT_APP_EXIT_SECONDS the queue-proxy
// stays up after its drain while the app still accepts connections (its
// preStop outlives the drain), the kubelet's probe on the admin port
// passing, and exits once the app has stopped.
func TestDrainAwaitsTheApp(t *testing.T) {
	appPort, app := serveTCP(t, testApp)
	c := testConfig(t, func(c *Config) { c.UserPort, c.DrainPeriod, c.AwaitAppExit = appPort, 0, 20*time.Second })
	_, serving, admin, cancel, runErr := runTCP(t, c)
	probe := func() int { return statusOrZero(admin.Addr().String(), stats.KubeletProbePath) }
	waitUntil(t, func() bool { return probe() == 200 })
	cancel()
	waitUntil(t, func() bool {
		conn, err := net.DialTimeout("tcp", serving.Addr().String(), time.Second)
		if err == nil {
			conn.Close()
		}
		return err != nil
	})
	select {
	case err := <-runErr:
		t.Fatalf("Run returned (%v) while the app still accepts connections", err)
	case <-time.After(300 * time.Millisecond):
	}
	if s := probe(); s != 200 {
		t.Errorf("the kubelet's probe after the drain, the app still up = %d, want 200", s)
	}
	_ = app.Shutdown()
	select {
	case err := <-runErr:
		if err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5 s of the app's stop")
	}
}

// statusOrZero GETs path from addr and returns the answer's status, 0 when
// there was none (the listener is gone).
func statusOrZero(addr, path string) int {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
