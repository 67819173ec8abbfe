package proxycore

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"ebb.dev/ebb/internal/testnet"
)

// The tests of the hop's mechanics, once for both proxies (each proxy
// tests its policy: routing, queueing, accounting, its own answers).
// testProxy is the smallest proxy a Trip makes.

// testProxy forwards every request to its apps, the first first: the
// hop's own resends, and Retry moves to the next app while retries
// allow. It answers a failed trip 502, 504 or 400, and reads a small
// request body whole before forwarding (as the activator does, so an
// idempotent one can be sent again). Its server is NewServer's.
type testProxy struct {
	apps    []*fasthttp.HostClient
	retries int
	timeout time.Duration
	server  *fasthttp.Server
	first   func(path []byte) int // the app of a request's first attempt (nil: 0)
	ln      net.Listener
	dial    func() (net.Conn, error)
	trips   sync.Pool
	open    atomic.Int64 // trips not Done
	checks  ConnChecks
	notSent NotSentMark // what the apps' not-sent answers are trusted by
}

// testTrip is a testProxy's per-request state: its policy.
type testTrip struct {
	Trip
	p        *testProxy
	app      int
	retries  int
	deadline time.Time
	body     []byte
}

func (x *testTrip) Upstream() (*fasthttp.HostClient, Deadlines) {
	return x.p.apps[x.app], Deadlines{Write: x.deadline, Head: x.deadline, Body: x.deadline}
}

func (x *testTrip) Retry(err error) error {
	if x.retries == x.p.retries || x.app+1 == len(x.p.apps) {
		return err
	}
	x.retries++
	x.app++
	return nil
}

func (x *testTrip) OpenTunnel(net.Conn) bool { return true }
func (x *testTrip) Done(int)                 { x.p.end(x) }

func (p *testProxy) end(x *testTrip) {
	p.open.Add(-1)
	p.trips.Put(x)
}

// maxTestBuffer is the testProxy's largest response body read whole, and
// largest request body read before forwarding.
const maxTestBuffer = 1 << 10

func (p *testProxy) handle(ctx *fasthttp.RequestCtx) {
	x := p.trips.Get().(*testTrip)
	p.open.Add(1)
	x.Scan(&ctx.Request.Header)
	x.app, x.retries, x.deadline, x.NotSent = 0, 0, time.Now().Add(p.timeout), p.notSent
	if p.first != nil {
		x.app = p.first(ctx.Path())
	}
	if req := &ctx.Request; req.IsBodyStream() {
		if cl := req.Header.ContentLength(); cl >= 0 && cl <= maxTestBuffer {
			x.body = make([]byte, cl)
			if _, err := io.ReadFull(req.BodyStream(), x.body); err != nil {
				ctx.Error(err.Error(), fasthttp.StatusBadRequest)
				p.end(x)
				return
			}
			req.SetBodyRaw(x.body)
		}
	}
	pending, err := x.Forward(ctx)
	if err == nil {
		if !pending {
			p.end(x)
		}
		return
	}
	x.Settle(ctx)
	switch {
	case IsClientError(err):
		ctx.SetStatusCode(fasthttp.StatusBadRequest)
	case IsTimeout(err):
		ctx.SetStatusCode(fasthttp.StatusGatewayTimeout)
	default:
		ctx.SetStatusCode(fasthttp.StatusBadGateway)
	}
	ctx.SetBodyString("test proxy: " + err.Error())
	p.end(x)
}

// proxyOptions change a testProxy.
type proxyOptions struct {
	retries int                        // Retry moves to the next app this many times
	timeout time.Duration              // each request's deadline (default 10s)
	tcp     bool                       // serve on 127.0.0.1, not in memory
	server  func(*ServerOptions)       // edits the server's options
	apps    []func() (net.Conn, error) // dial each app
	notSent NotSentMark                // the apps' not-sent answers trusted by this mark
}

// newTestProxy starts a testProxy in front of the apps until the test ends.
func newTestProxy(t testing.TB, o proxyOptions) *testProxy {
	t.Helper()
	p := &testProxy{retries: o.retries, timeout: o.timeout, notSent: o.notSent}
	if p.timeout == 0 {
		p.timeout = 10 * time.Second
	}
	for i, dial := range o.apps {
		p.apps = append(p.apps, &fasthttp.HostClient{Addr: "app" + strconv.Itoa(i), MaxConns: 64,
			Dial: func(string) (net.Conn, error) { return dial() }, NoDefaultUserAgentHeader: true})
	}
	p.trips.New = func() any { x := &testTrip{p: p}; x.Init(x, maxTestBuffer, &p.checks); return x }
	so := ServerOptions{Who: "test proxy", MaxConns: 64, HeaderTimeout: 10 * time.Second, BodyTimeout: 10 * time.Second,
		IdleTimeout: 10 * time.Second, MaxBufferedBody: maxTestBuffer, Logger: quietLogger{}}
	if o.server != nil {
		o.server(&so)
	}
	p.server = NewServer(p.handle, so)
	if o.tcp {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p.ln = WriteProgressListener(ln, 10*time.Second)
		p.dial = func() (net.Conn, error) { return net.Dial("tcp", ln.Addr().String()) }
	} else {
		ln := fasthttputil.NewInmemoryListener()
		p.ln, p.dial = ln, func() (net.Conn, error) { return ln.Dial() }
	}
	go func() { _ = p.server.Serve(p.ln) }()
	t.Cleanup(func() { _ = p.server.Shutdown() })
	return p
}

// startApp serves h on an in-memory listener until the test ends; tweak
// edits the server first.
func startApp(t testing.TB, h fasthttp.RequestHandler, tweak func(*fasthttp.Server)) func() (net.Conn, error) {
	t.Helper()
	ln := fasthttputil.NewInmemoryListener()
	s := &fasthttp.Server{Handler: h, Logger: quietLogger{}}
	if tweak != nil {
		tweak(s)
	}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Shutdown() })
	return ln.Dial
}

// do sends one request through p and returns status and body.
func (p *testProxy) do(t testing.TB, edit func(*fasthttp.Request)) (int, string, *fasthttp.Response) {
	t.Helper()
	c := &fasthttp.HostClient{Addr: "proxy", Dial: func(string) (net.Conn, error) { return p.dial() }, ReadTimeout: 20 * time.Second}
	req, resp := fasthttp.AcquireRequest(), &fasthttp.Response{}
	defer fasthttp.ReleaseRequest(req)
	req.SetRequestURI("http://x/")
	if edit != nil {
		edit(req)
	}
	resp.SkipBody = req.Header.IsHead()
	if err := c.Do(req, resp); err != nil {
		t.Fatalf("request: %v", err)
	}
	return resp.StatusCode(), string(resp.Body()), resp
}

// rawExchange writes raw to p on a new connection and reads one response,
// then, unless p closed the connection, GET /after, which the app must
// answer "ok ..." (testnet.RawExchange).
func (p *testProxy) rawExchange(t testing.TB, raw string) (resp *fasthttp.Response, closed bool) {
	t.Helper()
	c, err := p.dial()
	if err != nil {
		t.Fatal(err)
	}
	return testnet.RawExchange(t, c, raw, "x", "ok")
}

// ledgerApp records what an app executed (method, path and body length),
// and answers "ok LENGTH". The first slam requests are dropped at once
// after their head (a crash, or an app that closed the connection while
// the request was on its way): the body unread.
type ledgerApp struct {
	mu   sync.Mutex
	seen []string
	slam atomic.Int64
}

func (l *ledgerApp) handle(ctx *fasthttp.RequestCtx) {
	if l.slam.Add(-1) >= 0 {
		n := "unread"
		if !ctx.Request.IsBodyStream() {
			n = strconv.Itoa(len(ctx.Request.Body()))
		}
		l.record(ctx, n)
		ctx.HijackSetNoResponse(true)
		ctx.Hijack(func(c net.Conn) { _ = c.Close() })
		return
	}
	n := strconv.Itoa(len(ctx.Request.Body()))
	l.record(ctx, n)
	ctx.SetBodyString("ok " + n)
}

func (l *ledgerApp) record(ctx *fasthttp.RequestCtx, n string) {
	if p := string(ctx.Path()); p != "/after" { // RawExchange's follow-up
		l.mu.Lock()
		l.seen = append(l.seen, string(ctx.Method())+" "+p+" "+n)
		l.mu.Unlock()
	}
}

func (l *ledgerApp) executed() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.seen, "|")
}

// quietLogger drops fasthttp's messages (closed test connections).
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// recordingLogger keeps fasthttp's messages.
type recordingLogger struct {
	mu    sync.Mutex
	lines []string
}

func (l *recordingLogger) Printf(format string, args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *recordingLogger) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

var errNoApp = errors.New("connection refused")

// noApp is an app that cannot be reached.
func noApp() (net.Conn, error) { return nil, &net.OpError{Op: "dial", Net: "memory", Err: errNoApp} }
