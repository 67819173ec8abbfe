package queueproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/proxy/breaker"
	"ebb.dev/ebb/pkg/proxy/busypoll"
	"ebb.dev/ebb/pkg/proxy/connlimit"
	"ebb.dev/ebb/pkg/proxy/fastserve"
	"ebb.dev/ebb/pkg/proxy/h2c"
	"ebb.dev/ebb/pkg/proxy/proxycore"
	"ebb.dev/ebb/pkg/stats"
)

// QueueProxy wires the proxy, the prober, the reporter and the two servers.
// New starts nothing; Run does, and owns the shutdown order.
type QueueProxy struct {
	cfg      Config
	log      *zap.Logger
	ready    *readiness
	proxy    *proxy
	prober   *prober
	reporter *reporter
	serving  *fasthttp.Server // HTTP/1.1 on the serving port (upstream protocol http1)
	plain    *http.Server     // HTTP/1.1 on the serving port instead, with upstream protocol h2c (nil: http1)
	streams  *h2c.Server      // HTTP/2 (h2c) on the same port (h2.go)
	admin    *http.Server
	// kubeletProbed is set once the kubelet's probe (KubeletProbePath) has
	// been answered; probed gets a token at each answer (buffered 1):
	// awaitKubeletProbe waits for the next one.
	kubeletProbed atomic.Bool
	probed        chan struct{}
}

// Listeners are the sockets Run serves on; nil ones are opened on the
// configured ports (tests pass their own).
type Listeners struct {
	Serving, Admin net.Listener
}

// New builds a queue-proxy for a validated Config.
func New(c Config, log *zap.Logger) (*QueueProxy, error) { return newQueueProxy(c, log, nil) }

// newQueueProxy is New with the hop to the app replaceable (dial).
func newQueueProxy(c Config, log *zap.Logger, dial fasthttp.DialFunc) (*QueueProxy, error) {
	now := time.Now()
	m := newMetrics(c)
	ready := newReadiness()
	p, err := newProxy(c, m, ready, log, now, dial)
	if err != nil {
		return nil, err
	}
	m.watch(c, p, ready)
	appAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(c.UserPort))
	q := &QueueProxy{
		cfg: c, log: log, ready: ready, proxy: p,
		prober:   newProber(appAddr, c, ready, log),
		reporter: newReporter(p.acct, c, now, m, log),
	}
	q.serving = proxycore.NewServer(p.handle, proxycore.ServerOptions{
		Who: "queue-proxy", MaxConns: c.MaxConns, HeaderTimeout: c.HeaderTimeout, BodyTimeout: c.RequestTimeout, IdleTimeout: c.ClientIdleTimeout,
		MaxBufferedBody: maxBufferedBody, Logger: fastserve.Logger(log),
	})
	h2opts := h2c.ServerOptions{HeaderTimeout: c.HeaderTimeout, IdleTimeout: c.ClientIdleTimeout,
		MaxHeaderBytes: proxycore.MaxRequestHeadBytes, WriteTimeout: c.ClientWriteTimeout, ErrorLog: debugStdLog(log)}
	sp := newStreamProxy(p, log)
	q.streams = h2c.NewServer(sp, h2opts)
	if p.h2up, err = h2c.NewUpgradeServer(sp, h2opts); err != nil {
		return nil, err
	}
	if c.UpstreamProtocol == config.UpstreamH2C {
		q.plain = newPlainServer(c, sp, log)
	}
	q.probed = make(chan struct{}, 1)
	q.admin = &http.Server{Handler: q.adminHandler(m), ReadHeaderTimeout: c.HeaderTimeout,
		ReadTimeout: c.HeaderTimeout, WriteTimeout: adminWriteTimeout, IdleTimeout: c.ClientIdleTimeout,
		MaxHeaderBytes: adminMaxHeaderBytes}
	return q, nil
}

// The admin port's fixed limits: its requests are bodiless GETs from
// probes and scrapers, its answers small.
const (
	adminWriteTimeout   = 30 * time.Second
	adminMaxHeaderBytes = 16 << 10
)

// newProxy builds the request path.
// dial, when not nil, replaces TCP to the app (in-memory tests).
func newProxy(c Config, m *metrics, ready *readiness, log *zap.Logger, now time.Time, dial fasthttp.DialFunc) (*proxy, error) {
	marker, err := newProxyMarker(c, log)
	if err != nil {
		return nil, err
	}
	p := &proxy{
		marker: marker, cfg: c, headerBudget: headerBudget(c), bodies: newResponseBodies(c),
		acct: stats.NewAccounting(now), ready: ready, metrics: m, log: log, now: proxycore.Now,
	}
	p.exchanges.New = func() any { return newExchange(p) }
	if c.ContainerConcurrency > 0 {
		b, err := breaker.New(breaker.Params{Capacity: c.ContainerConcurrency, QueueDepth: c.queueDepth()})
		if err != nil {
			return nil, fmt.Errorf("building the breaker: %w", err)
		}
		p.breaker = b
	}
	hc := newAppClient(net.JoinHostPort("127.0.0.1", strconv.Itoa(c.UserPort)), c)
	p.poll = busypoll.New(c.BusyPoll, &p.open)
	hc.Dial = p.poll.Dial(dial)
	if dial == nil {
		hc.DialTimeout = p.poll.DialTimeout()
	}
	p.app = hc
	return p, nil
}

// Run serves until ctx ends, then drains: fail readiness, keep serving for
// the drain period, stop accepting and finish in-flight requests (up to the
// request timeout), stop the background loops, close the admin port.
func (q *QueueProxy) Run(ctx context.Context, ls Listeners) error {
	if err := q.listen(&ls); err != nil {
		return err
	}
	bgCtx, stopBG := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	bg.Go(func() { q.prober.run(bgCtx) })
	bg.Go(func() { q.reporter.run(bgCtx, reportPeriod) })
	split := h2c.NewSplit(q.proxy.poll.Listener(ls.Serving),
		h2c.SplitOptions{HeadTimeout: q.cfg.HeaderTimeout, MaxPending: q.cfg.MaxConns})
	serveErr := make(chan error, 3)
	go func() { serveErr <- split.Run() }()
	go func() { serveErr <- q.serveHTTP1(split.HTTP1()) }()
	go func() {
		serveErr <- serveStreams(q.streams, connlimit.Listen(split.HTTP2(), connlimit.Options{Max: q.cfg.MaxConns}))
	}()
	adminErr := make(chan error, 1)
	go func() {
		adminErr <- q.admin.Serve(connlimit.Listen(ls.Admin, connlimit.Options{Max: q.cfg.AdminMaxConns}))
	}()
	q.log.Info("queue-proxy serving", zap.String("serving", ls.Serving.Addr().String()),
		zap.String("admin", ls.Admin.Addr().String()), zap.Int("user_port", q.cfg.UserPort),
		zap.Int("container_concurrency", q.cfg.ContainerConcurrency))

	var err error
	select {
	case <-ctx.Done():
		if err = q.drain(serveErr, split); err == nil {
			q.awaitAppExit()
			q.awaitKubeletProbe()
		}
	case err = <-serveErr:
		err = fmt.Errorf("serving port: %w", err)
	case err = <-adminErr:
		err = fmt.Errorf("admin port: %w", err)
		_ = q.serving.Shutdown()
		_ = q.closePlain()
		_ = q.streams.Close()
	}
	if err != nil {
		_ = split.Close()
		_ = q.streams.Close()
	}
	stopBG()
	bg.Wait()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = q.admin.Shutdown(shutdownCtx)
	q.log.Info("queue-proxy stopped")
	return err
}

func (q *QueueProxy) listen(ls *Listeners) error {
	var err error
	if ls.Serving == nil {
		if ls.Serving, err = net.Listen("tcp", net.JoinHostPort(q.cfg.BindAddress, strconv.Itoa(q.cfg.ServingPort))); err != nil {
			return fmt.Errorf("listening on QUEUE_SERVING_PORT: %w", err)
		}
	}
	if ls.Admin == nil {
		if ls.Admin, err = net.Listen("tcp", net.JoinHostPort(q.cfg.BindAddress, strconv.Itoa(q.cfg.AdminPort))); err != nil {
			_ = ls.Serving.Close()
			return fmt.Errorf("listening on QUEUE_ADMIN_PORT: %w", err)
		}
	}
	return nil
}

// drain is the SIGTERM sequence. No accepted request is dropped: the
// listener closes only after the drain period, and Shutdown waits for every
// open connection to finish its request.
func (q *QueueProxy) drain(serveErr <-chan error, split io.Closer) error {
	q.ready.drain()
	q.log.Info("draining: readiness failed", zap.Duration("drain_period", q.cfg.DrainPeriod))
	time.Sleep(q.cfg.DrainPeriod)
	ctx, cancel := context.WithTimeout(context.Background(), q.cfg.RequestTimeout+time.Second)
	defer cancel()
	// Both protocols at once: HTTP/1.1 finishes its requests, HTTP/2 sends
	// GOAWAY and finishes its streams.
	h2Done := make(chan error, 2)
	go func() { h2Done <- q.streams.Shutdown(ctx) }()
	go func() { h2Done <- q.proxy.h2up.Shutdown(ctx) }() // connections upgraded from HTTP/1.1
	err := errors.Join(q.shutdownHTTP1(ctx), <-h2Done, <-h2Done)
	if err != nil {
		q.log.Warn("drain: requests still in flight at the request timeout",
			zap.Int64("in_flight", q.proxy.acct.InFlight()), zap.Error(err))
		_ = q.closePlain()
		_ = q.streams.Close()
		return nil
	}
	fastserve.CloseListener(split) // the splitter feeds both servers

	for range 3 { // the splitter and both servers
		if err := <-serveErr; err != nil {
			return fmt.Errorf("serving port: %w", err)
		}
	}
	// fasthttp does not track hijacked connections: wait for the upgrade
	// tunnels (still counted in flight) up to the same deadline.
	for q.proxy.acct.InFlight() > 0 && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	q.log.Info("drained", zap.Int64("in_flight", q.proxy.acct.InFlight()))
	return nil
}

// awaitAppExit keeps the queue-proxy up after its drain until the app
// stops accepting connections, at most AwaitAppExit: in a pod whose app's
// preStop outlives the drain, the kubelet probes the queue-proxy until the
// pod's last container stops, and a probe of a queue-proxy that exited
// is refused (a Warning Unhealthy Event a second). Its admin port, where
// the kubelet's probe is answered, stays open meanwhile.
func (q *QueueProxy) awaitAppExit() {
	if q.cfg.AwaitAppExit <= 0 {
		return
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(q.cfg.UserPort))
	for deadline := time.Now().Add(q.cfg.AwaitAppExit); time.Now().Before(deadline); time.Sleep(awaitAppEvery) {
		c, err := net.DialTimeout("tcp", addr, awaitAppEvery)
		if err != nil {
			q.log.Info("the app stopped after the drain")
			return
		}
		_ = c.Close()
	}
	q.log.Info("the app still accepts connections after the drain; stopping", zap.Duration("waited", q.cfg.AwaitAppExit))
}

// awaitAppEvery is how often awaitAppExit tries the app.
const awaitAppEvery = 50 * time.Millisecond

// awaitKubeletProbe, once the app is gone, waits for the kubelet's next
// probe (at most kubeletProbeWait), so that the queue-proxy exits just
// after answering one (Run then closes the admin port once that answer
// is written). The kubelet probes a terminating pod's readiness until
// its kill of the pod returns: its containers stopped, then its sandbox
// and network; and it judges the containers from the status it had
// before the kill (they still run), so any probe after the queue-proxy
// exited is refused, a Warning Unhealthy Event. Exiting just after a
// probe leaves the kubelet a whole probe period (1 s, as the webhook sets
// it) to finish the kill and stop probing. A queue-proxy the kubelet
// never probed (not on Kubernetes) does not wait.
func (q *QueueProxy) awaitKubeletProbe() {
	if !q.kubeletProbed.Load() {
		return
	}
	select {
	case <-q.probed: // an earlier probe: the next one is a period away
	default:
	}
	t := time.NewTimer(kubeletProbeWait)
	defer t.Stop()
	select {
	case <-q.probed:
		q.log.Info("stopping just after the kubelet's probe")
	case <-t.C:
		q.log.Info("no probe from the kubelet after the drain; stopping", zap.Duration("waited", kubeletProbeWait))
	}
}

// kubeletProbeWait bounds awaitKubeletProbe: two of the kubelet's probe
// periods (1 s, set by the webhook).
const kubeletProbeWait = 2 * time.Second

// serveStreams serves HTTP/2 connections until Shutdown; a listener closed
// by the HTTP/1.1 side's shutdown is the same ending.
func serveStreams(s interface{ Serve(net.Listener) error }, ln net.Listener) error {
	err := s.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// adminHandler serves /stats (the wire format), /metrics (Prometheus),
// /healthz (readiness for the platform) and /readyz (the kubelet's
// probe: the app's readiness, and ready through a drain: a terminating pod
// is out of the endpoints already, and its probe failing would only be
// Warning Events).
func (q *QueueProxy) adminHandler(m *metrics) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+stats.Path, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", stats.ContentType)
		_, _ = w.Write(q.reporter.Latest())
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET "+stats.KubeletProbePath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if q.ready.appReady() || q.ready.Draining() { // a draining pod does what it should
			_, _ = w.Write([]byte("queue"))
			q.kubeletProbed.Store(true)
			select { // awaitKubeletProbe
			case q.probed <- struct{}{}:
			default:
			}
			return
		}
		http.Error(w, "app not ready", http.StatusServiceUnavailable)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		switch {
		case q.ready.ready():
			if r.Header.Get(stats.ProbeHeaderName) == stats.ProbeHeaderValue {
				_, _ = w.Write([]byte(stats.ProbeHeaderValue))
				return
			}
			_, _ = w.Write([]byte("ok\n"))
		case q.ready.Draining():
			http.Error(w, "draining", http.StatusServiceUnavailable)
		default:
			http.Error(w, "app not ready", http.StatusServiceUnavailable)
		}
	})
	return mux
}
