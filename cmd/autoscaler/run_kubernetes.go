package main

import (
	"context"
	"errors"
	"flag"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/dashboard"
	"ebb.dev/ebb/pkg/platform"
	"ebb.dev/ebb/pkg/platform/kubernetes"
	"ebb.dev/ebb/pkg/platform/kubernetes/leader"
	"ebb.dev/ebb/pkg/platform/kubernetes/learnedstate"
	"ebb.dev/ebb/pkg/platform/kubernetes/reconciler"
	"ebb.dev/ebb/pkg/platform/kubernetes/resourcemetrics"
	"ebb.dev/ebb/pkg/platform/kubernetes/statsauth"
	"ebb.dev/ebb/pkg/stats"
)

// kubeFlags are the flags of `autoscaler run --platform kubernetes`.
type kubeFlags struct {
	kubeconfig       string
	namespace        string
	podName, podIP   string
	configMap        string
	activatorService string
	service          string
	lease            string
	leaseDuration    time.Duration
	renewDeadline    time.Duration
	retryPeriod      time.Duration
	queueServingPort int
	queueAdminPort   int
	activatorSA      string
	statsAudience    string
	webhook          *webhookFlags
}

func addKubeFlags(fs *flag.FlagSet) *kubeFlags {
	k := &kubeFlags{}
	env := func(name, def string) string {
		if v := os.Getenv(name); v != "" {
			return v
		}
		return def
	}
	host, _ := os.Hostname()
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "kubernetes: kubeconfig file (default $KUBECONFIG, else the pod's service account)")
	fs.StringVar(&k.namespace, "namespace", env(config.EnvPodNamespace, config.SystemNamespace),
		"kubernetes: Ebb's namespace: config-autoscaler, the activator's Service, the Lease (env POD_NAMESPACE)")
	fs.StringVar(&k.podName, "pod-name", env(config.EnvPodName, host), "kubernetes: this replica's identity in the Lease (env POD_NAME)")
	fs.StringVar(&k.podIP, "pod-ip", os.Getenv(config.EnvPodIP),
		"kubernetes: this replica's address, published as the autoscaler Service's endpoint while leading (env POD_IP)")
	fs.StringVar(&k.configMap, "configmap", config.ConfigMapName, "kubernetes: the ConfigMap of the autoscaler's settings")
	fs.StringVar(&k.activatorService, "activator-service", config.ActivatorName, "kubernetes: the activator's Service in the namespace")
	fs.StringVar(&k.service, "service", config.AutoscalerName, "kubernetes: the autoscaler's Service (no selector: the leader publishes itself)")
	fs.StringVar(&k.lease, "lease", config.AutoscalerName, "kubernetes: the Lease the replicas elect a leader with")
	fs.DurationVar(&k.leaseDuration, "lease-duration", 15*time.Second, "kubernetes: how long a leader's Lease lasts without renewal")
	fs.DurationVar(&k.renewDeadline, "renew-deadline", 10*time.Second, "kubernetes: how long the leader tries to renew before it stops deciding")
	fs.DurationVar(&k.retryPeriod, "retry-period", 2*time.Second, "kubernetes: how often the Lease is tried")
	fs.IntVar(&k.queueServingPort, "queue-serving-port", config.QueueServingPort, "kubernetes: the queue-proxy's serving port in the revisions' pods")
	fs.IntVar(&k.queueAdminPort, "queue-admin-port", config.QueueAdminPort, "kubernetes: the queue-proxy's admin port (stats) in the revisions' pods")
	fs.StringVar(&k.activatorSA, "activator-service-account", config.ActivatorName,
		"kubernetes: the activator's ServiceAccount in the namespace: the only one whose tokens POST /v1/stats accepts")
	fs.StringVar(&k.statsAudience, "stats-audience", statsauth.DefaultStatsAudience, "kubernetes: the audience of the activator's projected token (TokenReview)")
	k.webhook = addWebhookFlags(fs)
	return k
}

// runKubernetes runs the autoscaler on a cluster. Every replica serves
// its admin port; only the Lease's holder watches revisions and decides.
// Shutdown: the deciders stop, then the platform, then the Lease is
// released (a standby takes over at once), then the admin server stops.
// Losing the Lease stops deciding at once and fails the run, so the pod
// restarts as a standby.
func runKubernetes(ctx context.Context, f runFlags, k *kubeFlags, log *zap.Logger) error {
	client, restCfg, err := kubernetes.NewClient(k.kubeconfig, config.AutoscalerName+"/"+k.podName)
	if err != nil {
		return err
	}
	metrics, err := resourcemetrics.NewClient(restCfg)
	if err != nil {
		return err
	}
	plat, err := reconciler.New(reconciler.Options{Options: platform.Options{Logger: log.Named("kubernetes")},
		Client: client, Namespace: k.namespace, ConfigMapName: k.configMap, ActivatorService: k.activatorService,
		QueueServingPort: int32(k.queueServingPort), QueueAdminPort: int32(k.queueAdminPort), Metrics: metrics})
	if err != nil {
		return err
	}
	auth, err := statsauth.NewTokenReviewer(statsauth.Options{Client: client, Audience: k.statsAudience,
		Namespace: k.namespace, ServiceAccount: k.activatorSA})
	if err != nil {
		return err
	}
	store := learnedstate.New(learnedstate.Options{Client: client, Namespace: k.namespace, Exists: plat.OptedIn,
		Logger: log.Named("learned")})
	as, reg, scraper := newService(plat, f, autoscaler.Options{StatsAuth: auth, LearnedStore: store}, log)
	defer scraper.Close()
	plat.SetListener(as)

	srvs, admin, err := serveAll(f, as, reg)
	if err != nil {
		return err
	}
	var leading atomic.Bool // the certificates are written by the leader
	onLead := func() {}
	if k.webhook.addr != "" {
		// Every replica serves the webhook, leader or not: injection
		// needs no decision, and pods must not wait for an election.
		wh, err := startWebhook(ctx, k.webhook, k, webhookDeps{client: client, reg: reg, mayWrite: leading.Load}, log.Named("webhook"))
		if err != nil {
			return errors.Join(err, srvs.shutdown())
		}
		defer wh.stop()
		onLead = wh.certs.Poke
	}
	log.Info("autoscaler running on kubernetes", zap.String("api", "http://"+admin.String()),
		zap.String("namespace", k.namespace), zap.String("identity", k.podName),
		zap.String("activator", "system:serviceaccount:"+k.namespace+":"+k.activatorSA))

	err = leader.Run(ctx, leader.Options{Client: client, Logger: log.Named("leader"),
		Namespace: k.namespace, Name: k.lease, Identity: k.podName,
		LeaseDuration: k.leaseDuration, RenewDeadline: k.renewDeadline, RetryPeriod: k.retryPeriod,
		Service: k.service, IP: k.podIP, Port: portOf(admin), StatsPort: statsPort(f)},
		func(lctx context.Context) {
			leading.Store(true)
			defer leading.Store(false)
			onLead()
			lead(lctx, as, plat, log)
		})
	return errors.Join(err, srvs.shutdown())
}

// portOf is the port of a listener's address.
func portOf(a net.Addr) int32 {
	_, p, _ := net.SplitHostPort(a.String())
	n, _ := strconv.Atoi(p)
	return int32(n)
}

// statsPort is the port of --stats (0 when stats share the admin port).
func statsPort(f runFlags) int32 {
	if f.serve.stats == "" {
		return 0
	}
	_, p, _ := net.SplitHostPort(f.serve.stats)
	n, _ := strconv.Atoi(p)
	return int32(n)
}

// lead runs the platform and the deciders until ctx ends, then stops the
// deciders before the platform.
func lead(ctx context.Context, as *autoscaler.Autoscaler, plat *reconciler.Platform, log *zap.Logger) {
	platCtx, stopPlat := context.WithCancel(context.WithoutCancel(ctx))
	asCtx, stopAS := context.WithCancel(context.WithoutCancel(ctx))
	platDone, asDone := make(chan error, 1), make(chan error, 1)
	go func() { platDone <- plat.Run(platCtx) }()
	go func() { asDone <- as.Run(asCtx) }()
	select {
	case <-ctx.Done():
	case err := <-platDone:
		log.Error("kubernetes platform stopped", zap.Error(err))
		platDone <- err
	}
	stopAS()
	<-asDone
	stopPlat()
	if err := <-platDone; err != nil && ctx.Err() != nil {
		log.Warn("kubernetes platform stopped with an error", zap.Error(err))
	}
}

// adminMux serves the autoscaler's API, the dashboard and /metrics on the
// admin port, for both platforms; /v1/stats too unless statsApart (then
// the stats port serves it, and here it answers 404 saying so).
func adminMux(as *autoscaler.Autoscaler, reg *prometheus.Registry, statsApart bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", as.Handler())
	if statsApart {
		mux.HandleFunc("POST "+stats.BatchPath, statsMoved)
	}
	mux.Handle("GET /{$}", dashboard.Handler())
	mux.Handle("GET "+dashboard.AssetPrefix, dashboard.Handler())
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	return mux
}
