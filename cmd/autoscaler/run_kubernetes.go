package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
	"golang.org/x/time/rate"
	"k8s.io/client-go/dynamic"
	k8s "k8s.io/client-go/kubernetes"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/autoscaler/bucket"
	"ebb.dev/ebb/pkg/autoscaler/dashboard"
	"ebb.dev/ebb/pkg/autoscaler/fleetapi"
	"ebb.dev/ebb/pkg/autoscaler/scrape"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform"
	"ebb.dev/ebb/pkg/platform/kubernetes"
	"ebb.dev/ebb/pkg/platform/kubernetes/leader"
	"ebb.dev/ebb/pkg/platform/kubernetes/learnedstore"
	"ebb.dev/ebb/pkg/platform/kubernetes/proxysecret"
	"ebb.dev/ebb/pkg/platform/kubernetes/reconciler"
	"ebb.dev/ebb/pkg/platform/kubernetes/resourcemetrics"
	"ebb.dev/ebb/pkg/platform/kubernetes/revisionstatus"
	"ebb.dev/ebb/pkg/platform/kubernetes/statsauth"
	"ebb.dev/ebb/pkg/stats"
)

// kubeFlags are the flags of `autoscaler run --platform kubernetes`.
type kubeFlags struct {
	kubeconfig       string
	kubeContext      string
	statusObjects    bool
	statusWrites     float64
	namespace        string
	podName, podIP   string
	configMap        string
	activatorService string
	lease            string
	buckets          int
	leaseDuration    time.Duration
	renewDeadline    time.Duration
	retryPeriod      time.Duration
	queueServingPort int
	queueAdminPort   int
	activatorSA      string
	statsAudience    string
	proxySecret      string // the install's proxy secret's Secret ("": none)
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
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "kubernetes: kubeconfig file (default as kubectl: $KUBECONFIG's files, ~/.kube/config, "+
		"else the pod's service account)")
	fs.StringVar(&k.kubeContext, "context", "", "kubernetes: the kubeconfig context (default its current context)")
	fs.BoolVar(&k.statusObjects, "status-objects", true, "kubernetes: show each revision as a RevisionAutoscaler (kubectl get ra)")
	fs.Float64Var(&k.statusWrites, "status-writes-per-second", 20, "kubernetes: the most RevisionAutoscaler writes a second, per replica")
	fs.StringVar(&k.namespace, "namespace", env(config.EnvPodNamespace, config.SystemNamespace),
		"kubernetes: Ebb's namespace: config-autoscaler, the activator's Service, the Leases (env POD_NAMESPACE)")
	fs.StringVar(&k.podName, "pod-name", env(config.EnvPodName, host), "kubernetes: this replica's identity in the Leases (env POD_NAME)")
	fs.StringVar(&k.podIP, "pod-ip", os.Getenv(config.EnvPodIP),
		"kubernetes: this replica's address, where the other replicas and the activators reach it (env POD_IP)")
	fs.StringVar(&k.configMap, "configmap", config.ConfigMapName, "kubernetes: the ConfigMap of the autoscaler's settings")
	fs.StringVar(&k.activatorService, "activator-service", config.ActivatorName, "kubernetes: the activator's Service in the namespace")
	fs.StringVar(&k.lease, "lease", config.AutoscalerName,
		"kubernetes: the Lease the replicas elect a leader with (the webhook's certificates), and the prefix of the bucket and replica Leases")
	fs.IntVar(&k.buckets, "buckets", bucket.DefaultCount,
		"kubernetes: the buckets the revisions are shared in among the replicas (Knative's config-leader-election buckets); "+
			"at least the replicas you run; a change rolls out safely (docs/kubernetes.md, Changes of shape)")
	fs.DurationVar(&k.leaseDuration, "lease-duration", 15*time.Second,
		"kubernetes: how long a Lease lasts without renewal: a dead replica's buckets move within it")
	fs.DurationVar(&k.renewDeadline, "renew-deadline", 10*time.Second, "kubernetes: how long a holder tries to renew before it stops deciding")
	fs.DurationVar(&k.retryPeriod, "retry-period", 2*time.Second, "kubernetes: how often the Leases are renewed and tried")
	fs.IntVar(&k.queueServingPort, "queue-serving-port", config.QueueServingPort, "kubernetes: the queue-proxy's serving port in the revisions' pods")
	fs.IntVar(&k.queueAdminPort, "queue-admin-port", config.QueueAdminPort, "kubernetes: the queue-proxy's admin port (stats) in the revisions' pods")
	fs.StringVar(&k.activatorSA, "activator-service-account", config.ActivatorName,
		"kubernetes: the activator's ServiceAccount in the namespace: the only one whose tokens POST /v1/stats accepts")
	fs.StringVar(&k.statsAudience, "stats-audience", statsauth.DefaultStatsAudience, "kubernetes: the audience of the activator's projected token (TokenReview)")
	fs.StringVar(&k.proxySecret, "proxy-secret", stats.ProxySecretName,
		"kubernetes: the Secret in the namespace holding the install's proxy secret (key "+stats.ProxySecretKey+"), made when missing; "+
			"the activators read it, the webhook gives each injected queue-proxy its namespace's (empty: none, activator requests count as direct)")
	k.webhook = addWebhookFlags(fs)
	return k
}

// check reports the flags that break their rule.
func (k *kubeFlags) check() error {
	if err := bucket.CheckCount(k.buckets); err != nil {
		return fmt.Errorf("--buckets: %w", err)
	}
	if err := bucket.CheckLeaseDuration(k.leaseDuration); err != nil {
		return fmt.Errorf("--lease-duration %w", err)
	}
	if k.renewDeadline >= k.leaseDuration || k.retryPeriod >= k.renewDeadline {
		return fmt.Errorf("--retry-period %v, --renew-deadline %v, --lease-duration %v: each must be shorter than the next",
			k.retryPeriod, k.renewDeadline, k.leaseDuration)
	}
	return nil
}

// kubeRun is the autoscaler on a cluster: its parts, built by
// newKubeRun, run by run.
type kubeRun struct {
	status  *revisionstatus.Writer // nil with --status-objects=false
	k       *kubeFlags
	log     *zap.Logger
	client  k8s.Interface // everything but the Leases (fenced writes, the writes' rate limits)
	leases  k8s.Interface // the Leases only: their own rate limits and connection
	plat    *reconciler.Platform
	as      *autoscaler.Autoscaler
	scraper *scrape.Client
	buckets *leader.Buckets
	leading atomic.Bool // this replica is the elected leader: it writes the certificates and the ConfigMap's Events
	onLead  func()
	srvs    servers
	webhook *runningWebhook // nil without --webhook
}

// runKubernetes runs the autoscaler on a cluster. Every replica serves
// the API (any revision, forwarded to the replica that decides for it)
// and the webhook, watches the cluster, and decides for the revisions of
// the buckets it holds; the elected leader also writes the webhook's
// certificates. Shutdown: every held bucket is handed off (its deciders
// stop, its learned states are saved, its Lease released: another
// replica takes it at once), then the leader lets go, then the platform,
// the servers and, last, the webhook stop.
func runKubernetes(ctx context.Context, f runFlags, k *kubeFlags, log *zap.Logger) error {
	r, err := newKubeRun(ctx, f, k, log)
	if err != nil {
		return err
	}
	err = r.run(ctx)
	err = errors.Join(err, r.srvs.shutdown())
	if r.webhook != nil {
		r.webhook.stop()
	}
	r.scraper.Close()
	return err
}

func newKubeRun(ctx context.Context, f runFlags, k *kubeFlags, log *zap.Logger) (*kubeRun, error) {
	clients, err := kubernetes.NewClients(k.kubeconfig, k.kubeContext, config.AutoscalerName+"/"+k.podName)
	if err != nil {
		return nil, err
	}
	client, restCfg := clients.Writes, clients.Config
	metrics, err := resourcemetrics.NewClient(restCfg)
	if err != nil {
		return nil, err
	}
	r := &kubeRun{k: k, log: log, client: client, leases: clients.Leases, onLead: func() {}}
	removed := func(autoscaler.RevisionKey) {}
	r.plat, err = reconciler.New(reconciler.Options{Options: platform.Options{Logger: log.Named("kubernetes")},
		Client: client, Namespace: k.namespace, ConfigMapName: k.configMap, ActivatorService: k.activatorService,
		QueueServingPort: int32(k.queueServingPort), QueueAdminPort: int32(k.queueAdminPort), Metrics: metrics,
		Buckets: k.buckets, ConfigEvents: r.leading.Load, Removed: func(key autoscaler.RevisionKey) { removed(key) }})
	if err != nil {
		return nil, err
	}
	auth, err := statsauth.NewTokenReviewer(statsauth.Options{Client: client, Audience: k.statsAudience,
		Namespace: k.namespace, ServiceAccount: k.activatorSA})
	if err != nil {
		return nil, err
	}
	store := learnedstore.New(learnedstore.Options{Client: client, Namespace: k.namespace, Exists: r.plat.OptedIn,
		Logger: log.Named("learned")})
	var reg *prometheus.Registry
	r.as, reg, r.scraper = newService(r.plat, f, autoscaler.Options{StatsAuth: auth, LearnedStore: store}, log)
	r.plat.SetListener(r.as)
	if k.statusObjects {
		dyn, err := dynamic.NewForConfig(restCfg)
		if err != nil {
			r.scraper.Close()
			return nil, fmt.Errorf("kubernetes dynamic client: %w", err)
		}
		r.status = revisionstatus.New(revisionstatus.Options{Client: dyn, Summaries: r.as.EachSummary, Status: r.as.StatusOf,
			Failure: r.plat.Failure, Parking: r.plat.ParkStatus, Owner: r.plat.DeploymentUID, Limit: rate.Limit(k.statusWrites), Log: log.Named("status")})
		removed = r.status.Forget // before the platform runs
	}
	if err := r.serve(f, reg, store); err != nil {
		r.scraper.Close()
		return nil, err
	}
	deps := webhookDeps{client: client, reg: reg, mayWrite: r.leading.Load}
	if k.proxySecret != "" {
		// Every replica keeps it (any of them makes it when missing): the
		// activators wait for it, and the webhook needs it for each pod.
		keeper := proxysecret.New(proxysecret.Options{Client: client, Namespace: k.namespace, Name: k.proxySecret,
			Logger: log.Named("proxy-secret")})
		go keeper.Run(ctx)
		deps.proxySecret = keeper.Secret
	}
	if k.webhook.addr != "" {
		// Every replica serves the webhook, leader or not: injection
		// needs no decision, and pods must not wait for an election.
		if r.webhook, err = startWebhook(ctx, k.webhook, k, deps, log.Named("webhook")); err != nil {
			r.scraper.Close()
			return nil, errors.Join(err, r.srvs.shutdown())
		}
		r.onLead = r.webhook.certs.Poke
	}
	return r, nil
}

// serve opens the admin and stats listeners, makes the bucket Leases'
// holder with their addresses, and serves: the fleet's API on the admin
// port, the gated reports on the stats port.
func (r *kubeRun) serve(f runFlags, reg *prometheus.Registry, store *learnedstore.Store) error {
	k := r.k
	aln, asrv, err := f.serve.listen("--admin", f.admin, nil)
	if err != nil {
		return err
	}
	sln, ssrv := aln, asrv // stats on the admin port without --stats
	if f.serve.stats != "" {
		if sln, ssrv, err = f.serve.listen("--stats", f.serve.stats, nil); err != nil {
			aln.Close()
			return err
		}
	}
	admin, statsAddr := k.addresses(aln.Addr(), sln.Addr())
	gate := fleetapi.NewGate(k.lease, k.buckets, reg)
	r.buckets, err = leader.NewBuckets(leader.BucketOptions{Client: r.leases, Logger: r.log.Named("buckets"), Namespace: k.namespace,
		Prefix: k.lease, Identity: k.podName, Count: k.buckets, Admin: admin, Stats: statsAddr,
		LeaseDuration: k.leaseDuration, RenewDeadline: k.renewDeadline, RetryPeriod: k.retryPeriod,
		Holder: bucketHolder{plat: r.plat, gate: gate, store: store}})
	if err != nil {
		aln.Close()
		sln.Close()
		return err
	}
	r.plat.SetFence(r.buckets) // every write for a revision, checked again as it is sent (fence.Transport)
	gate.SetFence(r.buckets.Owns)
	r.as.SetStatsGate(gate) // after the credentials: 401 before 421
	bucketOf := func(rev autoscaler.RevisionKey) int { return bucket.Of(rev.String(), k.buckets) }
	store.SetFence(r.buckets, bucketOf)
	if r.status != nil {
		r.status.SetFence(r.buckets, bucketOf)
	}
	api := fleetapi.API(fleetapi.APIOptions{Local: adminMux(r.as, reg, f.serve.stats != ""), Owners: r.buckets, Logger: r.log.Named("fleet")})
	if f.serve.stats != "" {
		asrv.Handler, ssrv.Handler = api, r.as.StatsHandler()
		r.srvs.serve(aln, asrv)
		r.srvs.serve(sln, ssrv)
	} else {
		mux := http.NewServeMux()
		mux.Handle("/", api)
		mux.Handle("POST "+stats.BatchPath, r.as.StatsHandler())
		asrv.Handler = mux
		r.srvs.serve(aln, asrv)
	}
	if admin == "" {
		r.log.Warn("no --pod-ip: the other replicas cannot forward this one's revisions' questions, nor the activators reach it")
	}
	r.log.Info("autoscaler running on kubernetes", zap.String("api", aln.Addr().String()), zap.String("published", admin),
		zap.String("stats", statsAddr), zap.String("namespace", k.namespace), zap.String("identity", k.podName), zap.Int("buckets", k.buckets),
		zap.String("activator", "system:serviceaccount:"+k.namespace+":"+k.activatorSA))
	return nil
}

// addresses are where this replica answers the API and takes reports,
// published on its Lease: its pod address with the listeners' ports;
// empty without --pod-ip.
func (k *kubeFlags) addresses(admin, statsLn net.Addr) (string, string) {
	if k.podIP == "" {
		return "", ""
	}
	port := func(a net.Addr) string {
		_, p, _ := net.SplitHostPort(a.String())
		return p
	}
	return net.JoinHostPort(k.podIP, port(admin)), net.JoinHostPort(k.podIP, port(statsLn))
}

// run runs the platform and the deciders, then the bucket Leases (once
// the platform's caches are there) and the leader election, until ctx
// ends; then it stops them in order. A platform that fails (it cannot
// read the cluster), or bucket Leases that cannot be watched, fail the
// run: the pod restarts.
func (r *kubeRun) run(ctx context.Context) error {
	platCtx, stopPlat := context.WithCancel(context.WithoutCancel(ctx))
	asCtx, stopAS := context.WithCancel(context.WithoutCancel(ctx))
	workCtx, stopWork := context.WithCancel(ctx)
	defer stopWork()
	platDone, asDone, bucketsDone := make(chan error, 1), make(chan error, 1), make(chan error, 1)
	go func() { platDone <- r.plat.Run(platCtx) }()
	go func() { asDone <- r.as.Run(asCtx) }()
	if r.status != nil {
		statusCtx, stopStatus := context.WithCancel(ctx)
		statusDone := make(chan struct{})
		go func() { defer close(statusDone); r.status.Run(statusCtx) }()
		defer func() { stopStatus(); <-statusDone }()
	}
	var wg sync.WaitGroup
	var failed error
	select {
	case <-ctx.Done():
	case err := <-platDone:
		platDone <- err
	case <-r.plat.Ready():
		wg.Go(func() { bucketsDone <- r.buckets.Run(workCtx) })
		wg.Go(func() { r.lead(workCtx) })
		select {
		case <-ctx.Done():
		case err := <-platDone:
			platDone <- err
		case err := <-bucketsDone:
			if err != nil {
				failed = fmt.Errorf("the bucket Leases: %w", err)
			}
		}
	}
	stopWork()
	wg.Wait() // the buckets handed off, the Lease let go
	stopAS()
	<-asDone
	stopPlat()
	if err := <-platDone; err != nil && ctx.Err() == nil {
		failed = errors.Join(failed, fmt.Errorf("kubernetes platform stopped: %w", err))
	} else if err != nil {
		r.log.Warn("kubernetes platform stopped with an error", zap.Error(err))
	}
	return failed
}

// lead campaigns for the leader's Lease until ctx ends: the leader
// writes the webhook's certificates and the ConfigMap's Events.
func (r *kubeRun) lead(ctx context.Context) {
	k := r.k
	err := leader.Run(ctx, leader.Options{Client: r.leases, Logger: r.log.Named("leader"),
		Namespace: k.namespace, Name: k.lease, Identity: k.podName,
		LeaseDuration: k.leaseDuration, RenewDeadline: k.renewDeadline, RetryPeriod: k.retryPeriod},
		func(lctx context.Context) {
			r.leading.Store(true)
			defer r.leading.Store(false)
			r.onLead()
			<-lctx.Done()
		})
	if err != nil {
		r.log.Error("leader election failed; another replica writes the webhook's certificates", zap.Error(err))
	}
}

// bucketHolder is what a bucket held means here: its reports are taken
// (the gate), its revisions decided (the platform feeds them to the
// autoscaler), from the learned states the last holder saved.
type bucketHolder struct {
	plat  *reconciler.Platform
	gate  *fleetapi.Gate
	store *learnedstore.Store
}

func (h bucketHolder) Gain(ctx context.Context, i int) {
	h.store.Refresh()
	h.plat.Gain(ctx, i)
	h.gate.Open(i)
}

func (h bucketHolder) Lose(ctx context.Context, i int) {
	h.gate.Close(ctx, i)
	h.plat.Lose(ctx, i)
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
