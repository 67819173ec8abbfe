package activator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/proxy/busypoll"
	"ebb.dev/ebb/pkg/proxy/fastserve"
	"ebb.dev/ebb/pkg/proxy/proxycore"
	"ebb.dev/ebb/pkg/stats"
)

// Options configure an Activator. The settings' defaults are those of the
// Settings table (DefaultOptions); New replaces no value: each field says
// what 0 means, or New refuses 0. The wiring's nil values (Stats, Prober,
// Logger, Clock, Metrics) are stated per field.
type Options struct {
	// Listener serves the requests (required).
	Listener net.Listener
	// Platform lists the revisions and their replicas (required).
	Platform Platform
	// Stats receives the load reports and pokes; nil discards them.
	Stats StatSink
	// Prober probes replicas that are not ready yet; nil probes them over
	// HTTP with the queue-proxy's probe header.
	Prober  Prober
	Logger  *zap.Logger           // nil: no logs
	Clock   Clock                 // nil: SystemClock
	Metrics prometheus.Registerer // nil: no metrics registered

	// PodName is this activator's name in its reports.
	PodName string
	// Hosts route the Host header to a revision.
	Hosts HostRules
	// QueueTimeout bounds the wait for a replica when the revision does not
	// set its own; 0 means the revision's request timeout.
	QueueTimeout time.Duration
	// Queue bounds the waiting requests; each limit must be above 0.
	Queue QueueLimits
	// MaxBufferedBody is the largest request body read whole before
	// proxying (such a request can be retried on another replica); larger
	// and chunked bodies stream through. Must be above 0 (fasthttp would
	// read 0 as 4 MiB); MaxRetries 0 is the way to resend nothing.
	MaxBufferedBody int
	// MaxConns bounds the client connections served at once (and so the
	// requests in the activator); more get fasthttp's 503 at accept.
	// Must be above 0. Memory grows with it: about 26 KiB per busy
	// connection.
	MaxConns int
	// HeaderTimeout bounds the read of a request head, from the
	// connection's accept (its first request) or from a keep-alive
	// request's first byte: a client that stalls is disconnected, so it
	// cannot hold one of MaxConns. Must be above 0.
	HeaderTimeout time.Duration
	// BodyTimeout bounds the read of a request body, from the end of its
	// head, queueing included; it replaces HeaderTimeout once the head is
	// in. An upgrade (websocket) has no read deadline. Must be above 0; the
	// default, 10m, is longer than the queue-proxy's default request
	// timeout (300s), after which an upload could not succeed anyway.
	BodyTimeout time.Duration
	// IdleTimeout bounds the wait for the next request on a keep-alive
	// client connection. Must be above 0.
	IdleTimeout time.Duration
	// WriteTimeout bounds each write of an answer to a client: one that
	// takes nothing for this long is disconnected (HTTP/2: its stream is
	// reset), so its replica slot goes to the next request; a slow
	// download that keeps reading is never cut. Must be above 0.
	WriteTimeout time.Duration
	// ProxySecret is the install's secret: a request to a revision of
	// namespace NS carries the marker K-Proxy-Request: activator
	// stats.NamespaceProxySecret(ProxySecret, NS), by which that
	// namespace's queue-proxies (and no other's) know it came from an
	// activator. Empty: the plain marker, which an Ebb queue-proxy does not
	// honour (it then counts the request as direct); New logs a warning.
	// SetProxySecret replaces it while the activator runs.
	ProxySecret string
	// Namespaces are the namespaces served; a request for a revision of
	// another namespace gets 404. Empty: all.
	Namespaces []string
	// RevisionHeader honours the Ebb-Revision header (RevisionHeader),
	// which names a revision whatever the Host. Off by default: it would
	// let a client bypass an ingress that routes by Host.
	RevisionHeader bool
	// ProbeInterval is the period of the probes of a replica that is not
	// ready yet; ProbeTimeout bounds one probe. Both must be above 0.
	ProbeInterval, ProbeTimeout time.Duration
	// ConnectTimeout bounds the connect to a replica (its TCP handshake):
	// a replica whose SYN goes unanswered (an address whose pod is gone, a
	// SYN dropped on a full accept queue) would otherwise hold the request
	// for the kernel's SYN retries, about 127 s on Linux, up to its
	// timeout. A connect that times out sent nothing, so the request goes
	// to another replica (or waits for one), and this one is probed again.
	// Must be above 0.
	ConnectTimeout time.Duration
	// SlowRequest: a request that took at least this long from its arrival
	// to its end (an upgrade's tunnel excepted) is logged at Warning with
	// the stage its time went to (queued, upstream: connecting and waiting
	// for the answer's head, body: the answer's body) and its replica, and
	// counted in ebb_activator_slow_requests_total. 0: never.
	SlowRequest time.Duration
	// ClientCacheSize is the number of per-replica HTTP clients kept
	// (least recently used evicted first). Must be above 0.
	ClientCacheSize int
	// MaxRetries is the number of times a request is sent again to
	// another replica after a connection error; 0 sends none again (the
	// connection error is the client's 502).
	MaxRetries int
	// ReportPeriod is the period of the load reports (DefaultReportPeriod).
	// Must be above 0.
	ReportPeriod time.Duration
	// ShutdownDelay is the time between failing readiness and closing the
	// listener, so load balancers notice (0: none); DrainTimeout bounds
	// the wait for queued and in-flight requests and upgrade tunnels after
	// it (0: no wait: what is queued fails and the tunnels close at once).
	ShutdownDelay, DrainTimeout time.Duration
	// Dial connects to replicas; nil dials TCP. Tests dial in memory.
	Dial fasthttp.DialFunc
	// BusyPoll is how long a socket read polls before it parks while the
	// activator is nearly idle (pkg/proxy/busypoll): it saves the wake-up of a
	// sleeping vCPU per read, most of a hop's latency with few clients.
	// 0 never polls.
	BusyPoll time.Duration
}

// setDefaults fills the wiring left nil and normalizes the domains; it
// replaces no setting (see Options).
func (o *Options) setDefaults() {
	o.Hosts.ClusterDomain = strings.ToLower(strings.Trim(o.Hosts.ClusterDomain, "."))
	o.Hosts.LocalDomain = strings.ToLower(strings.Trim(o.Hosts.LocalDomain, "."))
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Clock == nil {
		o.Clock = SystemClock{}
	}
	if o.Stats == nil {
		o.Stats = discardStats{}
	}
}

func (o *Options) validate() error {
	var errs []error
	check := func(bad bool, format string, args ...any) {
		if bad {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(o.Listener == nil, "activator: a Listener is required")
	check(o.Platform == nil, "activator: a Platform is required")
	check(!validLabel([]byte(o.Hosts.LocalNamespace)), "activator: local namespace %q must be a DNS label", o.Hosts.LocalNamespace)
	check(o.Hosts.ClusterDomain == "", "activator: the cluster domain must be set (e.g. cluster.local)")
	check(o.Queue.PerRevision <= 0 || o.Queue.Total <= 0 || o.Queue.PerRevisionBytes <= 0 || o.Queue.TotalBytes <= 0,
		"activator: queue limits %+v must be above 0", o.Queue)
	check(o.QueueTimeout < 0, "activator: queue timeout %v must not be negative", o.QueueTimeout)
	check(o.BusyPoll < 0 || o.BusyPoll > time.Millisecond, "activator: busy poll %v must be within [0, 1ms]", o.BusyPoll)
	check(o.MaxBufferedBody <= 0, "activator: max buffered body %d must be above 0 (fasthttp reads 0 as 4 MiB); "+
		"to resend no request, set MaxRetries to 0", o.MaxBufferedBody)
	check(o.MaxConns <= 0 || o.ClientCacheSize <= 0, "activator: max conns %d and client cache size %d must be above 0",
		o.MaxConns, o.ClientCacheSize)
	check(o.ConnectTimeout <= 0, "activator: connect timeout %v must be above 0 (start from DefaultOptions)", o.ConnectTimeout)
	check(o.SlowRequest < 0, "activator: slow request %v must not be negative (0: never logged)", o.SlowRequest)
	check(o.MaxRetries < 0, "activator: max retries %d must not be negative (0: none)", o.MaxRetries)
	check(o.ProbeInterval <= 0 || o.ProbeTimeout <= 0 || o.ReportPeriod <= 0 || o.HeaderTimeout <= 0 || o.BodyTimeout <= 0 ||
		o.IdleTimeout <= 0 || o.WriteTimeout <= 0, "activator: probe interval %v, probe timeout %v, report period %v, header "+
		"timeout %v, body timeout %v, idle timeout %v and write timeout %v must be above 0 (start from DefaultOptions)",
		o.ProbeInterval, o.ProbeTimeout, o.ReportPeriod, o.HeaderTimeout, o.BodyTimeout, o.IdleTimeout, o.WriteTimeout)
	check(o.ShutdownDelay < 0 || o.DrainTimeout < 0, "activator: shutdown delay %v and drain timeout %v must not be negative (0: none)",
		o.ShutdownDelay, o.DrainTimeout)
	if err := stats.ValidateProxySecret(o.ProxySecret); err != nil {
		errs = append(errs, fmt.Errorf("activator: proxy secret: %w", err))
	}
	for _, ns := range o.Namespaces {
		check(!validLabel([]byte(ns)), "activator: namespace %q must be a DNS label", ns)
	}
	return errors.Join(errs...)
}

// Activator is the front door of revisions without enough ready
// replicas: it routes by Host, buffers within bounds, wakes the
// autoscaler, throttles to each replica's capacity and proxies.
type Activator struct {
	opts    Options
	log     *zap.Logger
	clock   Clock
	stats   StatSink
	prober  Prober
	clients *clientCache
	metrics *metrics
	server  *fasthttp.Server
	h2s     *h2Side // the HTTP/2 (h2c) side of the data port (h2.go)
	global  *budget
	started time.Time
	nss     namespaceSet // the namespaces served (empty: all)

	routes   atomic.Pointer[routeTable] // read by every request; replaced by apply
	ready    atomic.Bool                // serving and synced with the platform
	stopping atomic.Bool                // shutdown has begun
	open     atomic.Int64               // requests not finished (handlers and streams)

	exchanges sync.Pool // *exchange
	timers    sync.Pool // *time.Timer, stopped

	watch   clientWatch          // the client connections of waiting requests
	tunnels tunnels              // the open upgrade tunnels
	poll    *busypoll.Poller     // nil: reads never poll
	checks  proxycore.ConnChecks // replica connections closed for not being clean

	ctl controlPlane
}

// New builds an Activator. It starts nothing: Run does.
func New(o Options) (*Activator, error) {
	o.setDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	a := &Activator{
		opts: o, log: o.Logger, clock: o.Clock, stats: o.Stats, prober: o.Prober,
		global: &budget{maxCount: o.Queue.Total, maxBytes: o.Queue.TotalBytes},
	}
	a.nss = namespaceSet(slices.Clone(o.Namespaces))
	a.ctl.proxySecret = o.ProxySecret
	if o.ProxySecret == "" {
		a.log.Warn("no proxy secret: queue-proxies count this activator's requests as direct, and the autoscaler sees them twice",
			zap.String("fix", "set ACTIVATOR_PROXY_SECRET (or _FILE) to the install's secret, and each queue-proxy's to its namespace's; "+
				"see docs/activator.md"))
	}
	a.poll = busypoll.New(o.BusyPoll, &a.open)
	clients, err := newClientCache(o.ClientCacheSize, a.poll.Dial(o.Dial), a.connectWithin(a.poll.DialTimeout()))
	if err != nil {
		return nil, err
	}
	a.clients = clients
	a.opts.Listener = a.poll.Listener(o.Listener)
	if a.prober == nil {
		a.prober = newHTTPProber(clients, o.ProbeTimeout)
	}
	a.routes.Store(&routeTable{})
	a.ctl.revs = map[string]*revision{}
	a.exchanges.New = func() any { return newExchange(a) }
	a.server = a.newServer()
	if a.h2s, err = a.newH2Side(); err != nil {
		return nil, err
	}
	if a.metrics, err = newMetrics(o.Metrics, a); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *Activator) newServer() *fasthttp.Server {
	o := a.opts
	return proxycore.NewServer(a.serveRequest, proxycore.ServerOptions{
		Who: "activator", BadTarget: func() { a.metrics.results[resultBadRequest].Inc() },
		MaxConns: o.MaxConns, HeaderTimeout: o.HeaderTimeout, BodyTimeout: o.BodyTimeout, IdleTimeout: o.IdleTimeout,
		MaxBufferedBody: o.MaxBufferedBody, Logger: fastserve.Logger(o.Logger),
	})
}

// Ready reports whether the activator serves and knows the revisions
// (false before the first platform update and while shutting down).
func (a *Activator) Ready() bool { return a.ready.Load() }

// Run serves until ctx ends, then shuts down in order: fail readiness,
// wait ShutdownDelay, stop accepting, drain queued and in-flight requests
// and upgrade tunnels up to DrainTimeout, fail or close what is left, stop
// the background loops. It
// returns nil after a clean shutdown, or the error that stopped it.
func (a *Activator) Run(ctx context.Context) error {
	a.started = a.clock.Now()
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	a.ctl.setContext(bg)
	var loops sync.WaitGroup
	failed := make(chan error, 2)
	loops.Go(func() {
		if err := a.opts.Platform.Watch(bg, a.apply); err != nil {
			failed <- fmt.Errorf("watching the platform: %w", err)
		}
	})
	loops.Go(func() { a.reportLoop(bg) })
	loops.Go(func() { a.watch.run(bg, a.clock) })
	served := make(chan struct{})
	go func() {
		defer close(served)
		a.serveSplit(failed) // HTTP/1.1 and HTTP/2 (h2.go)
	}()
	var err error
	var reason string
	select {
	case <-ctx.Done():
		reason = context.Cause(ctx).Error() // "interrupt signal received" from signal.NotifyContext
	case err = <-failed:
		reason = err.Error()
	}
	a.shutdown(reason)
	fastserve.CloseListener(a.opts.Listener)
	<-served
	stopBG()
	a.ctl.wait()
	loops.Wait()
	a.log.Info("activator stopped")
	return err
}

// shutdown fails readiness, stops accepting and drains (reason, logged,
// says why: the signal, or what failed): queued and
// in-flight requests, then the upgrade tunnels (fasthttp's Shutdown does
// not wait for hijacked connections), all within DrainTimeout. What is
// left then is failed (queued requests) or closed (tunnels).
func (a *Activator) shutdown(reason string) {
	a.stopping.Store(true)
	a.ready.Store(false)
	a.log.Info("shutting down", zap.String("reason", reason), zap.Duration("delay", a.opts.ShutdownDelay),
		zap.Duration("drain_timeout", a.opts.DrainTimeout))
	a.sleep(a.opts.ShutdownDelay)
	ctx, cancel := context.WithTimeout(context.Background(), a.opts.DrainTimeout)
	defer cancel()
	streamsDrained := a.shutdownStreams(ctx) // GOAWAY; HTTP/2 streams finish meanwhile
	drained := a.server.ShutdownWithContext(ctx) == nil && <-streamsDrained
	if !drained {
		a.log.Warn("drain timeout: failing the requests still queued", zap.Int64("open_requests", a.open.Load()))
		a.ctl.closeAll(errShuttingDown)
		_ = a.h2s.server.Close()
	}
	if a.tunnels.wait(ctx) && drained {
		return
	}
	if n := a.tunnels.closeAll(); n > 0 { // and refuse a tunnel still opening
		a.log.Warn("drain timeout: closing the open tunnels", zap.Int("tunnels", n))
	}
	for range 500 { // the failed requests and closed tunnels end within milliseconds
		if a.open.Load() == 0 {
			return
		}
		a.sleep(10 * time.Millisecond)
	}
}

// sleep waits d on the activator's clock.
func (a *Activator) sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	t := a.clock.NewTicker(d)
	<-t.C()
	t.Stop()
}

// discardStats is the StatSink used when none is configured.
type discardStats struct{}

func (discardStats) Report([]stats.Stat) {}
func (discardStats) Poke(stats.Stat)     {}
