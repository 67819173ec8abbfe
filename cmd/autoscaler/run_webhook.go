package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/manifest/inject"
	"ebb.dev/ebb/pkg/platform/kubernetes/webhook"
)

// webhookFlags are the flags of the sidecar injection webhook
// (docs/kubernetes.md, "Sidecar injection").
type webhookFlags struct {
	addr        string
	image       string
	service     string
	hosts       string
	secret      string
	config      string
	drainPeriod time.Duration
}

func addWebhookFlags(fs *flag.FlagSet) *webhookFlags {
	w := &webhookFlags{}
	fs.StringVar(&w.addr, "webhook", "", "kubernetes: serve the sidecar injection webhook (HTTPS) on this address, e.g. :8443 (empty: off)")
	fs.StringVar(&w.image, "webhook-image", os.Getenv(config.EnvQueueProxyImage),
		"kubernetes: the queue-proxy image the webhook injects (env "+config.EnvQueueProxyImage+": deploy/ sets it, and kustomize's images rewrite it)")
	fs.StringVar(&w.service, "webhook-service", config.WebhookServiceName, "kubernetes: the webhook's Service in the namespace (its names are the certificate's)")
	fs.StringVar(&w.hosts, "webhook-hosts", "",
		"kubernetes: the serving certificate's names and IPs, comma-separated (empty: the Service's DNS names)")
	fs.StringVar(&w.secret, "webhook-secret", config.WebhookSecretName, "kubernetes: the Secret in the namespace that holds the webhook's CA and certificate")
	fs.StringVar(&w.config, "webhook-config", config.WebhookConfigName, "kubernetes: the MutatingWebhookConfiguration whose caBundle the webhook keeps current")
	fs.DurationVar(&w.drainPeriod, "webhook-drain-period", 15*time.Second,
		"kubernetes: the injected queue-proxy's DRAIN_PERIOD_SECONDS (and the app's preStop sleep)")
	return w
}

// certHosts are the serving certificate's names.
func (w *webhookFlags) certHosts(namespace string) []string {
	if w.hosts != "" {
		return strings.Split(w.hosts, ",")
	}
	return []string{w.service + "." + namespace + ".svc", w.service + "." + namespace + ".svc.cluster.local"}
}

// webhookDeps are what the webhook takes from the autoscaler.
type webhookDeps struct {
	client   k8s.Interface
	reg      *prometheus.Registry
	mayWrite func() bool // this replica leads: it writes the certificates
	// proxySecret gives the install's proxy secret (nil: --proxy-secret is
	// empty, and the sidecars get none).
	proxySecret func() (string, error)
}

// runningWebhook is a started webhook: stop ends the server (the reviews
// in flight finished) and the certificate manager.
type runningWebhook struct {
	certs *webhook.CertManager
	stop  func()
}

// startWebhook serves the injection webhook and runs its certificate
// manager.
func startWebhook(ctx context.Context, w *webhookFlags, k *kubeFlags, deps webhookDeps, log *zap.Logger) (*runningWebhook, error) {
	s := inject.DefaultSettings(w.image)
	s.ServingPort, s.AdminPort = int32(k.queueServingPort), int32(k.queueAdminPort)
	s.DrainPeriod, s.ProxySecretName = w.drainPeriod, "" // each pod's namespace secret instead (webhook.Policy.ProxySecret)
	certs, err := webhook.NewCertManager(webhook.CertManagerOptions{Client: deps.client, Log: log.Named("certs"), Clock: clock.RealClock{},
		Namespace: k.namespace, SecretName: w.secret, WebhookConfig: w.config, Certs: webhook.DefaultCertOptions(w.certHosts(k.namespace)),
		MayWrite: deps.mayWrite})
	if err != nil {
		return nil, err
	}
	latency := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ebb_webhook_admission_duration_seconds",
		Help:    "time to answer one AdmissionReview (body read to answer written)",
		Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05}})
	deps.reg.MustRegister(latency)
	h := &webhook.Handler{Policy: webhook.Policy{Settings: s, ExcludedNamespaces: webhook.DefaultExcludedNamespaces(k.namespace),
		ProxySecret: deps.proxySecret},
		Log: log, Observe: func(d time.Duration) { latency.Observe(d.Seconds()) }}
	srv, err := webhook.Listen(w.addr, h, certs.GetCertificate)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(ctx)
	certsDone, srvDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(certsDone); _ = certs.Run(cctx) }()
	go func() {
		defer close(srvDone)
		// A handshake before the first certificate is loaded would fail
		// (a replica just started): connections wait in the listen
		// backlog until there is one, so the API server's call is late,
		// not refused.
		for !certs.Ready() {
			select {
			case <-cctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
		if err := srv.Serve(); err != nil {
			log.Error("webhook server stopped", zap.Error(err))
		}
	}()
	log.Info("sidecar injection webhook serving", zap.String("addr", srv.Addr().String()), zap.String("path", webhook.InjectPath),
		zap.String("image", w.image), zap.Strings("hosts", w.certHosts(k.namespace)))
	stop := func() {
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer scancel()
		if err := srv.Shutdown(sctx); err != nil {
			log.Warn("webhook server shutdown", zap.Error(err))
		}
		cancel()
		<-srvDone
		<-certsDone
	}
	return &runningWebhook{certs: certs, stop: stop}, nil
}

// checkWebhook refuses --webhook without what it needs.
func (w *webhookFlags) check(platform string) error {
	if w.addr == "" {
		return nil
	}
	if platform != "kubernetes" {
		return fmt.Errorf("--webhook=%s: the webhook serves a cluster's API server: add --platform kubernetes, or drop --webhook", w.addr)
	}
	if w.image == "" {
		return fmt.Errorf("--webhook-image is empty: name the queue-proxy image to inject (or set %s, as deploy/ does)", config.EnvQueueProxyImage)
	}
	if w.drainPeriod < 0 {
		return fmt.Errorf("--webhook-drain-period=%s: must be at least 0 (0: no drain)", w.drainPeriod)
	}
	return nil
}
