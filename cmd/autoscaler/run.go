package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/term"

	"ebb.dev/ebb/pkg/activator"
	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/autoscaler/scrape"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/config/hpa"
	"ebb.dev/ebb/pkg/platform"
	"ebb.dev/ebb/pkg/platform/local"
	"ebb.dev/ebb/pkg/stats"
)

const runUsage = `usage: autoscaler run [flags]

Runs Ebb on this machine: the autoscaler, the activator as the front door,
and every revision of the manifests as local processes (the app's command
plus a queue-proxy). A revision NAME in NAMESPACE answers at
http://NAME.NAMESPACE.localhost:PORT/ (or any address with that Host header).
With --platform kubernetes it runs the autoscaler alone, on a cluster
(docs/kubernetes.md): the flags marked "kubernetes:" apply.

Flags:
`

// runFlags are the flags of `autoscaler run`.
type runFlags struct {
	manifests  string
	listen     string
	admin      string
	queueProxy string
	record     string
	logDir     string
	logLevel   string
	logFormat  string
	platform   string
	statsToken string // local: where the per-run stats secret is written
	stateDir   string // local: where the learned policy's state is kept
	saveEvery  time.Duration
	serve      *serveFlags
}

func runRun(args []string, s streams) int {
	var f runFlags
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(s.err)
	fs.StringVar(&f.manifests, "manifests", "deploy/local",
		"manifest files or directories, comma-separated (a config-autoscaler ConfigMap, Deployments, Knative Services)")
	fs.StringVar(&f.listen, "listen", "127.0.0.1:8080", "the activator's address: the front door of every revision")
	fs.StringVar(&f.admin, "admin", "127.0.0.1:"+strconv.Itoa(config.AutoscalerAdminPort), "the autoscaler's API address (status, explain, /revisions)")
	fs.StringVar(&f.queueProxy, "queue-proxy", "bin/queueproxy", "the queue-proxy binary")
	fs.StringVar(&f.record, "record", "", "write the samples fed to each decider as scenario files into this directory (outside --manifests)")
	fs.StringVar(&f.logDir, "log-dir", "", "where the replicas' logs go (default: a directory under the system's temporary directory)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "auto", "json (as every component of a cluster, with Knative's keys), console, "+
		"or auto: console when stderr is a terminal, else json")
	fs.StringVar(&f.platform, "platform", "local", "local (this machine) or kubernetes (a cluster: docs/kubernetes.md)")
	fs.StringVar(&f.statsToken, "stats-token-file", "", "local: write the per-run secret that POST /v1/stats requires to this file, "+
		"for an activator started outside this process: created new with mode 0600, or an earlier run's file of this user with mode 0600; "+
		"a symbolic link or any other existing file is refused (empty: not written; the embedded activator reports in-process)")
	fs.StringVar(&f.stateDir, "state-dir", "", "local: keep the learned scale-to-zero policy's state in this directory, one file per revision, "+
		"so that it survives a restart (empty: not kept; on kubernetes it is kept in the ConfigMaps ebb-learned-state-N of --namespace)")
	fs.DurationVar(&f.saveEvery, "learned-save-interval", autoscaler.DefaultLearnedSaveInterval,
		"how often the learned policy's changed states are saved (at most once per revision; and once more at shutdown)")
	f.serve = addServeFlags(fs)
	kube := addKubeFlags(fs)
	fs.Usage = func() { fmt.Fprint(s.err, runUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 || f.platform != "local" && f.platform != "kubernetes" {
		fs.Usage()
		return 2
	}
	if f.saveEvery <= 0 {
		fmt.Fprintf(s.err, "autoscaler run: --learned-save-interval %v: must be > 0\n", f.saveEvery)
		return 2
	}
	if err := kube.webhook.check(f.platform); err != nil {
		fmt.Fprintf(s.err, "autoscaler run: %v\n", err)
		return 2
	}
	if err := kube.check(); f.platform == "kubernetes" && err != nil {
		fmt.Fprintf(s.err, "autoscaler run: %v\n", err)
		return 2
	}
	if err := f.serve.check(); err != nil {
		fmt.Fprintf(s.err, "autoscaler run: %v\n", err)
		return 2
	}
	if err := checkRecordDir(f.record, f.manifests); f.platform == "local" && err != nil {
		fmt.Fprintf(s.err, "autoscaler run: %v\n", err)
		return 2
	}
	log, err := newLogger(f.logLevel, f.logFormat, s)
	if err != nil {
		fmt.Fprintf(s.err, "autoscaler run: %v\n", err)
		return 2
	}
	defer log.Sync()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	run := func() error { return runLocal(ctx, f, log) }
	if f.platform == "kubernetes" {
		run = func() error { return runKubernetes(ctx, f, kube, log) }
	}
	if err := run(); err != nil {
		log.Error("autoscaler run failed", zap.Error(err))
		return 1
	}
	return 0
}

// newLogger writes to stderr at level: JSON lines with the keys of
// Knative's config-logging (timestamp, severity, logger, caller, message)
// for a cluster's log collector, or the console encoder with the time of
// day for a person; format auto picks console when stderr is a terminal.
func newLogger(level, format string, s streams) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level %q: must be debug, info, warn or error", level)
	}
	if format == "auto" {
		format = "json"
		if f, ok := s.err.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			format = "console"
		}
	}
	var enc zapcore.Encoder
	switch format {
	case "json":
		c := zap.NewProductionEncoderConfig()
		c.TimeKey, c.LevelKey, c.NameKey, c.CallerKey, c.MessageKey, c.StacktraceKey = "timestamp", "severity", "logger", "caller", "message", "stacktrace"
		c.EncodeTime = zapcore.ISO8601TimeEncoder
		enc = zapcore.NewJSONEncoder(c)
	case "console":
		c := zap.NewDevelopmentEncoderConfig()
		c.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
		enc = zapcore.NewConsoleEncoder(c)
	default:
		return nil, fmt.Errorf("--log-format %q: must be json, console or auto (console on a terminal, else json)", format)
	}
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(s.err), lvl)), nil
}

// runLocal wires the pieces and shuts them down in order: the activator
// drains first (its requests need the replicas), then the deciders stop,
// then the platform stops the replicas.
func runLocal(ctx context.Context, f runFlags, log *zap.Logger) error {
	plat, err := local.New(local.Options{Options: platform.Options{Logger: log.Named("local")},
		Paths: strings.Split(f.manifests, ","), QueueProxy: f.queueProxy, LogDir: f.logDir})
	if err != nil {
		return err
	}
	secret, err := newStatsSecret(f.statsToken)
	if err != nil {
		return err
	}
	auth, err := autoscaler.NewSharedSecret(secret, "activator-local")
	if err != nil {
		return err
	}
	o := autoscaler.Options{StatsAuth: auth, StatsLocalHostsOnly: true}
	if f.stateDir != "" {
		store, err := local.NewLearnedFiles(f.stateDir)
		if err != nil {
			return fmt.Errorf("--state-dir %s: %w", f.stateDir, err)
		}
		o.LearnedStore = store
	}
	as, reg, scraper := newService(plat, f, o, log)
	defer scraper.Close()
	plat.SetListener(as)

	front, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", f.listen, err)
	}
	ao := activator.DefaultOptions()
	ao.Listener, ao.Platform, ao.Stats, ao.Metrics = front, plat, statSink{as: as, log: log}, reg
	ao.Logger, ao.PodName = log.Named("activator"), "activator-local"
	ao.Hosts.LocalDomain = "localhost"
	ao.ProxySecret = plat.ProxySecret() // the queue-proxies' per-run secret: their proxied counts hold
	act, err := activator.New(ao)
	if err != nil {
		return err
	}
	srvs, admin, err := serveAll(f, adminMux(as, reg, f.serve.stats != ""), as.StatsHandler())
	if err != nil {
		return err
	}
	log.Info("ebb is running", zap.String("frontDoor", "http://"+front.Addr().String()), zap.String("api", "http://"+admin.String()),
		zap.String("dashboard", "http://"+admin.String()+"/"),
		zap.String("try", "go tool hey -z 30s -c 50 -host hello.default.localhost http://"+front.Addr().String()+"/"))
	return runOrdered(ctx, act, as, plat, srvs)
}

// serveAll serves admin on the admin port and, with --stats, statsH on
// the stats port, and returns the admin listener's address.
func serveAll(f runFlags, admin, statsH http.Handler) (servers, net.Addr, error) {
	var srvs servers
	ln, srv, err := f.serve.listen("--admin", f.admin, admin)
	if err != nil {
		return nil, nil, err
	}
	srvs.serve(ln, srv)
	if f.serve.stats != "" {
		sln, ssrv, err := f.serve.listen("--stats", f.serve.stats, statsH)
		if err != nil {
			srvs.shutdown()
			return nil, nil, err
		}
		srvs.serve(sln, ssrv)
	}
	return srvs, ln.Addr(), nil
}

func runOrdered(ctx context.Context, act *activator.Activator, as *autoscaler.Autoscaler, plat *local.Platform, srvs servers) error {
	platCtx, stopPlat := context.WithCancel(context.Background())
	asCtx, stopAS := context.WithCancel(context.Background())
	platDone, asDone, actDone := make(chan error, 1), make(chan error, 1), make(chan error, 1)
	go func() { platDone <- plat.Run(platCtx) }()
	go func() { asDone <- as.Run(asCtx) }()
	go func() { actDone <- act.Run(ctx) }()
	var errs []error
	select {
	case err := <-actDone: // the activator stops when ctx ends (after draining), or on failure
		errs = append(errs, err)
	case err := <-platDone:
		errs = append(errs, fmt.Errorf("local platform stopped: %w", err))
		<-ctx.Done()
		errs = append(errs, <-actDone)
	}
	stopAS()
	errs = append(errs, <-asDone)
	srvs.shutdown()
	stopPlat()
	errs = append(errs, <-platDone)
	return errors.Join(errs...)
}

// statSink hands the embedded activator's reports to the autoscaler.
type statSink struct {
	as  *autoscaler.Autoscaler
	log *zap.Logger
}

func (s statSink) Report(batch []stats.Stat) {
	for _, st := range batch {
		s.ingest(st)
	}
}

func (s statSink) Poke(st stats.Stat) { s.ingest(st) }

func (s statSink) ingest(st stats.Stat) {
	if st.Time.IsZero() {
		st.Time = time.Now()
	}
	if err := s.as.Ingest(st); err != nil && !errors.Is(err, autoscaler.ErrUnknownRevision) {
		s.log.Warn("activator report rejected", zap.Error(err))
	}
}

// newService builds the autoscaler for a platform, with its stats scraper
// and a metrics registry holding the Go and process collectors.
// o carries the platform's stats authentication.
func newService(plat autoscaler.Platform, f runFlags, o autoscaler.Options, log *zap.Logger) (*autoscaler.Autoscaler, *prometheus.Registry, *scrape.Client) {
	scraper := scrape.New()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	o.Platform, o.Scraper, o.Logger, o.RecordDir, o.Metrics = plat, scraper, log.Named("autoscaler"), f.record, reg
	o.Documents = hpa.DocumentParser{}
	o.LearnedSaveInterval = f.saveEvery
	as := autoscaler.New(f.serve.options(o))
	return as, reg, scraper
}
