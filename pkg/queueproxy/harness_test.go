package queueproxy

import (
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"
	"go.uber.org/zap"
)

// noEnv is a lookupEnv with nothing set.
func noEnv(string) (string, bool) { return "", false }

// testProxySecret is the test activator's secret; testMarker is the
// K-Proxy-Request value an activator with it sends.
const (
	testProxySecret = "test-secret-0123456789"
	testMarker      = "activator " + testProxySecret
)

// testConfig is the default configuration with a pod name, the test proxy
// secret and the edits.
func testConfig(t testing.TB, edit func(*Config)) Config {
	t.Helper()
	c, err := Load(nil, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	c.PodName = "test-pod"
	c.ProxySecret = testProxySecret
	if edit != nil {
		edit(&c)
	}
	if errs := c.crossChecks(); len(errs) > 0 {
		t.Fatalf("test config: %v", errs)
	}
	return c
}

// rig is a queue-proxy whose app and clients are in memory.
type rig struct {
	q      *QueueProxy
	client *fasthttp.HostClient // to the serving port
}

// startApp serves h on an in-memory listener until the test ends.
func startApp(t testing.TB, h fasthttp.RequestHandler) *fasthttputil.InmemoryListener {
	t.Helper()
	ln := fasthttputil.NewInmemoryListener()
	s := &fasthttp.Server{Handler: h, StreamRequestBody: true, NoDefaultServerHeader: true, NoDefaultDate: true,
		Logger: quietLogger{}}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Shutdown() })
	return ln
}

// newRig builds a ready queue-proxy in front of app (no prober, no reporter
// loop: tests drive them).
func newRig(t testing.TB, c Config, app *fasthttputil.InmemoryListener) *rig {
	t.Helper()
	q, err := newQueueProxy(c, zap.NewNop(), func(string) (net.Conn, error) { return app.Dial() })
	if err != nil {
		t.Fatal(err)
	}
	q.ready.app.Store(true)
	ln := fasthttputil.NewInmemoryListener()
	go func() { _ = q.serving.Serve(ln) }()
	t.Cleanup(func() { _ = q.serving.Shutdown() })
	client := &fasthttp.HostClient{
		Addr:                     "queue-proxy",
		Dial:                     func(string) (net.Conn, error) { return ln.Dial() },
		MaxConns:                 1000,
		ReadTimeout:              20 * time.Second,
		NoDefaultUserAgentHeader: true,
		DisablePathNormalizing:   true,
	}
	return &rig{q: q, client: client}
}

// do sends one request and returns a copy of status, body and response.
func (r *rig) do(t testing.TB, edit func(*fasthttp.Request)) (int, string, *fasthttp.Response) {
	t.Helper()
	status, body, resp, err := r.send(edit)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	return status, body, resp
}

// send is do for a goroutine other than the test's: it returns the error.
func (r *rig) send(edit func(*fasthttp.Request)) (int, string, *fasthttp.Response, error) {
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.SetRequestURI("http://queue-proxy/")
	if edit != nil {
		edit(req)
	}
	resp := &fasthttp.Response{}
	if err := r.client.Do(req, resp); err != nil {
		return 0, "", nil, err
	}
	return resp.StatusCode(), string(resp.Body()), resp, nil
}

// servingListenerT serves r's proxy on a fresh in-memory listener.
func servingListenerT(t testing.TB, r *rig) *fasthttputil.InmemoryListener {
	t.Helper()
	ln := fasthttputil.NewInmemoryListener()
	go func() { _ = r.q.serving.Serve(ln) }()
	return ln
}

// waitUntil polls cond (state, not time, is what tests wait for) with a
// generous bound for a loaded machine.
func waitUntil(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 20s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// quietLogger drops fasthttp's messages (closed test connections).
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}
