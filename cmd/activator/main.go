// Command activator is Ebb's activator: the front door of revisions with
// no ready replica or too little spare capacity. See docs/activator.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/activator"
	"ebb.dev/ebb/pkg/activator/filesource"
	"ebb.dev/ebb/pkg/activator/statsclient"
	"ebb.dev/ebb/pkg/envconfig"
	"ebb.dev/ebb/pkg/proxy/connlimit"
	"ebb.dev/ebb/pkg/proxy/fastserve"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "activator:", err)
		os.Exit(1)
	}
}

// run wires the activator and runs it until ctx ends. Shutdown order:
// the activator fails readiness and drains; then the stats client sends
// what is left; then the admin server stops; then the logs flush.
func run(ctx context.Context, args []string, getenv func(string) string) error {
	cfg, err := loadConfig(args, getenv)
	if errors.Is(err, flag.ErrHelp) {
		envconfig.Usage(os.Stdout, "activator", settings())
		return nil
	}
	if err != nil {
		return err
	}
	log, err := newLogger(cfg)
	if err != nil {
		return err
	}
	defer log.Sync() // nothing to do about it at exit
	if getenv("GOMEMLIMIT") == "" && cfg.MemoryLimit > 0 {
		debug.SetMemoryLimit(cfg.MemoryLimit)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	reload := make(chan struct{}, 1)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go forwardHUP(ctx, hup, reload)
	source := &filesource.Source{Path: cfg.RevisionsFile, Interval: cfg.RevisionsPoll, Reload: reload, Logger: log.Named("revisions")}
	var platform activator.Platform = source
	var router statsclient.Router // on a cluster: the autoscaler replicas' Leases
	if cfg.Platform == platformKubernetes {
		platform, router, err = kubePlatform(cfg, log.Named("kubernetes"))
	} else {
		_, _, err = source.Load()
	}
	if err != nil {
		return err
	}

	if err := loadProxySecretFile(cfg); err != nil {
		return err
	}
	o := cfg.Activator
	o.Platform, o.Logger, o.Metrics = platform, log, reg
	var sender *statsclient.Client
	if cfg.AutoscalerURL != "" || router != nil {
		so := statsclient.Options{URL: cfg.AutoscalerURL, Router: router, TokenFile: cfg.StatsTokenFile, Logger: log.Named("stats")}
		if sender, err = statsclient.New(so); err != nil {
			return fmt.Errorf("AUTOSCALER_URL: %w", err)
		}
		o.Stats = sender
	} else {
		log.Info("AUTOSCALER_URL is empty: load reports are not sent")
	}
	if o.Listener, err = net.Listen("tcp", cfg.Address); err != nil {
		return fmt.Errorf("ACTIVATOR_ADDRESS: %w", err)
	}
	a, err := activator.New(o)
	if err != nil {
		o.Listener.Close()
		return err
	}
	admin, err := startAdmin(cfg, a, reg, log)
	if err != nil {
		o.Listener.Close()
		return err
	}
	return runAll(ctx, a, sender, admin, log, cfg)
}

func runAll(ctx context.Context, a *activator.Activator, sender *statsclient.Client, admin *fasthttp.Server,
	log *zap.Logger, cfg *config) error {
	statsCtx, stopStats := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	if sender != nil {
		wg.Go(func() { sender.Run(statsCtx) }) // returns nil
	}
	if cfg.ProxySecretFile != "" {
		wg.Go(func() { followProxySecret(statsCtx, cfg.ProxySecretFile, proxySecretPoll, a.SetProxySecret, log) })
	}
	log.Info("activator serving", zap.String("address", cfg.Address), zap.String("admin_address", cfg.AdminAddress),
		zap.String("revisions_file", cfg.RevisionsFile))
	err := a.Run(ctx)
	stopStats()
	wg.Wait()
	if serr := admin.Shutdown(); serr != nil {
		err = errors.Join(err, fmt.Errorf("stopping the admin server: %w", serr))
	}
	return err
}

func forwardHUP(ctx context.Context, hup <-chan os.Signal, reload chan<- struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			select {
			case reload <- struct{}{}:
			default: // a reload is already pending
			}
		}
	}
}

// tooManyFromIP answers a connection over ACTIVATOR_ADMIN_MAX_CONNS_PER_IP.
var tooManyFromIP = []byte("HTTP/1.1 429 Too Many Requests\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\n" +
	"Content-Length: 69\r\n\r\nactivator admin: too many connections from your address; retry later\n")

// adminWriteTimeout bounds the write of an admin answer (/metrics is the
// largest, a few hundred KiB at most).
const adminWriteTimeout = 30 * time.Second

// startAdmin serves /healthz (alive), /readyz (ready to take traffic) and
// /metrics, with the data port's head and idle deadlines, a write timeout,
// and caps on connections in all and per client IP.
func startAdmin(cfg *config, a *activator.Activator, reg *prometheus.Registry, log *zap.Logger) (*fasthttp.Server, error) {
	ln, err := net.Listen("tcp", cfg.AdminAddress)
	if err != nil {
		return nil, fmt.Errorf("ACTIVATOR_ADMIN_ADDRESS: %w", err)
	}
	metrics := fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	s := &fasthttp.Server{Name: "ebb-activator-admin", ReadTimeout: cfg.Activator.HeaderTimeout,
		WriteTimeout: adminWriteTimeout, IdleTimeout: cfg.Activator.IdleTimeout, Concurrency: cfg.AdminMaxConns,
		SecureErrorLogMessage: true, Logger: fastserve.Logger(log.Named("admin"))}
	s.Handler = func(ctx *fasthttp.RequestCtx) {
		switch string(ctx.Path()) {
		case "/healthz":
			ctx.SetBodyString("ok\n")
		case "/readyz":
			if a.Ready() {
				ctx.SetBodyString("ready\n")
			} else {
				ctx.Error("not ready\n", fasthttp.StatusServiceUnavailable)
			}
		case "/metrics":
			metrics(ctx)
		default:
			ctx.Error("not found: try /healthz, /readyz or /metrics\n", fasthttp.StatusNotFound)
		}
	}
	go func() {
		if err := s.Serve(connlimit.Listen(ln, connlimit.Options{PerIP: cfg.AdminMaxConnsPerIP, Refuse: tooManyFromIP})); err != nil {
			log.Error("admin server stopped", zap.Error(err))
		}
	}()
	return s, nil
}

func newLogger(cfg *config) (*zap.Logger, error) {
	zc := zap.NewProductionConfig()
	zc.Level = zap.NewAtomicLevelAt(cfg.LogLevel)
	zc.Sampling = nil
	log, err := zc.Build()
	if err != nil {
		return nil, fmt.Errorf("building the logger: %w", err)
	}
	return log.With(zap.String("pod", cfg.Activator.PodName)), nil
}
