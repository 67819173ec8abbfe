package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"ebb.dev/ebb/pkg/config"
)

// CertManagerOptions say where the certificates live.
type CertManagerOptions struct {
	Client kubernetes.Interface
	Log    *zap.Logger
	Clock  clock.Clock
	// Namespace and SecretName locate the certificate Secret
	// (ebb-system/ebb-webhook-certs).
	Namespace, SecretName string
	// WebhookConfig is the MutatingWebhookConfiguration whose caBundle is
	// kept current (every webhook in it).
	WebhookConfig string
	Certs         CertOptions
	// Interval is how often the Secret and the configuration are checked
	// (a minute: rotations are due days ahead).
	Interval time.Duration
	// MayWrite says whether this replica writes (the autoscaler: while it
	// holds the Lease); nil: always. A replica that may not only loads
	// what the Secret holds.
	MayWrite func() bool
}

// CertManager keeps the webhook's certificates: it creates and rotates
// them in a Secret, keeps the webhook configuration's caBundle current,
// and serves the current certificate to the TLS listener.
//
// Every replica runs one and serves what the Secret holds; only the one
// that MayWrite (the leader) writes. Writes are also compare-and-swap on
// the objects' resourceVersion (Create fails if another replica created
// first, Update fails on a newer version), so a leader that has just lost
// its Lease cannot overwrite its successor's certificates.
type CertManager struct {
	o      CertManagerOptions
	poke   chan struct{}                   // a round now (Poke); capacity 1
	cert   atomic.Pointer[tls.Certificate] // written by Run's goroutine, read by TLS handshakes
	loaded []byte                          // the loaded tls.crt; Reconcile's caller only
}

// NewCertManager checks the options; Run starts the work.
func NewCertManager(o CertManagerOptions) (*CertManager, error) {
	if o.Client == nil || o.Log == nil || o.Clock == nil || o.Namespace == "" || o.SecretName == "" || o.WebhookConfig == "" {
		return nil, errors.New("webhook certificates: Client, Log, Clock, Namespace, SecretName and WebhookConfig are required")
	}
	if o.Interval <= 0 {
		o.Interval = time.Minute
	}
	return &CertManager{o: o, poke: make(chan struct{}, 1)}, nil
}

// GetCertificate is tls.Config's: the current serving certificate, so a
// rotation takes effect at the next handshake without a restart.
func (m *CertManager) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c := m.cert.Load()
	if c == nil {
		return nil, errors.New("ebb webhook: no serving certificate yet")
	}
	return c, nil
}

// Ready: a serving certificate is loaded.
func (m *CertManager) Ready() bool { return m.cert.Load() != nil }

// notReadyInterval is how often a replica without a certificate looks for
// one (the leader's first write).
const notReadyInterval = time.Second

// Poke asks Run for a round now (the replica has just become the leader).
func (m *CertManager) Poke() {
	select {
	case m.poke <- struct{}{}:
	default:
	}
}

// Run reconciles at once, then every Interval (every second while it has
// no certificate to serve) and at each Poke, until ctx ends. A failed
// round is logged and retried at the next one.
func (m *CertManager) Run(ctx context.Context) error {
	for {
		wait := m.o.Interval
		if err := m.Reconcile(ctx); err != nil && ctx.Err() == nil {
			m.o.Log.Warn("webhook certificates not reconciled; retrying", zap.Duration("in", wait), zap.Error(err))
		}
		if !m.Ready() {
			wait = min(wait, notReadyInterval)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-m.poke:
		case <-m.o.Clock.After(wait):
		}
	}
}

// Reconcile runs one round: read the Secret and the configuration, write
// what Plan says, publish the bundle, load the serving certificate. A
// conflict with another replica's write is retried once at once.
func (m *CertManager) Reconcile(ctx context.Context) error {
	err := m.reconcile(ctx)
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		err = m.reconcile(ctx)
	}
	return err
}

func (m *CertManager) reconcile(ctx context.Context) error {
	secrets := m.o.Client.CoreV1().Secrets(m.o.Namespace)
	sec, err := secrets.Get(ctx, m.o.SecretName, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading Secret %s/%s: %w", m.o.Namespace, m.o.SecretName, err)
	}
	exists := err == nil
	var cur map[string][]byte
	if exists {
		cur = sec.Data
	}
	published, err := m.published(ctx)
	if err != nil {
		return err
	}
	next, changed, err := plan(cur, published, m.o.Clock.Now(), m.o.Certs)
	if err != nil {
		return err
	}
	if changed && m.o.MayWrite != nil && !m.o.MayWrite() {
		// The leader writes; serve what is there meanwhile.
		if !exists {
			return nil // nothing to serve until the leader has written it
		}
		return m.load(cur)
	}
	if changed {
		if err := m.write(ctx, sec, exists, next); err != nil {
			return err
		}
		m.o.Log.Info("webhook certificates written", zap.String("secret", m.o.Namespace+"/"+m.o.SecretName))
	}
	if err := m.publish(ctx, next[keyCABundle]); err != nil {
		return err
	}
	return m.load(next)
}

func (m *CertManager) write(ctx context.Context, sec *corev1.Secret, exists bool, data map[string][]byte) error {
	secrets := m.o.Client.CoreV1().Secrets(m.o.Namespace)
	if !exists {
		_, err := secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: m.o.SecretName, Namespace: m.o.Namespace,
				Labels: map[string]string{config.ManagedByLabel: config.ManagedBy, config.PartOfLabel: config.ManagedBy}},
			Type: corev1.SecretTypeOpaque, Data: data}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating Secret %s/%s: %w", m.o.Namespace, m.o.SecretName, err)
		}
		return nil
	}
	upd := sec.DeepCopy()
	upd.Data = data
	if _, err := secrets.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating Secret %s/%s: %w", m.o.Namespace, m.o.SecretName, err)
	}
	return nil
}

// published is the caBundle every webhook of the configuration trusts
// (nil when they differ or the configuration is missing).
func (m *CertManager) published(ctx context.Context) ([]byte, error) {
	cfg, err := m.o.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, m.o.WebhookConfig, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading MutatingWebhookConfiguration %s: %w", m.o.WebhookConfig, err)
	}
	var b []byte
	for i, w := range cfg.Webhooks {
		if i > 0 && !bytes.Equal(b, w.ClientConfig.CABundle) {
			return nil, nil
		}
		b = w.ClientConfig.CABundle
	}
	return b, nil
}

// publish sets the caBundle of every webhook of the configuration.
func (m *CertManager) publish(ctx context.Context, bundle []byte) error {
	api := m.o.Client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	cfg, err := api.Get(ctx, m.o.WebhookConfig, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		m.o.Log.Warn("the webhook configuration is missing: pods are not injected until it is applied",
			zap.String("mutatingwebhookconfiguration", m.o.WebhookConfig))
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading MutatingWebhookConfiguration %s: %w", m.o.WebhookConfig, err)
	}
	upd := cfg.DeepCopy()
	changed := false
	for i := range upd.Webhooks {
		if !bytes.Equal(upd.Webhooks[i].ClientConfig.CABundle, bundle) {
			upd.Webhooks[i].ClientConfig.CABundle = bundle
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if _, err := api.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating the caBundle of MutatingWebhookConfiguration %s: %w", m.o.WebhookConfig, err)
	}
	m.o.Log.Info("webhook caBundle published", zap.String("mutatingwebhookconfiguration", m.o.WebhookConfig))
	return nil
}

// load makes the Secret's serving certificate the one TLS serves.
func (m *CertManager) load(d map[string][]byte) error {
	if m.cert.Load() != nil && bytes.Equal(m.loaded, d[keyCert]) {
		return nil
	}
	c, err := tls.X509KeyPair(d[keyCert], d[keyKey])
	if err != nil {
		return fmt.Errorf("loading the webhook's serving certificate from Secret %s/%s: %w", m.o.Namespace, m.o.SecretName, err)
	}
	m.loaded = bytes.Clone(d[keyCert])
	m.cert.Store(&c)
	m.o.Log.Info("webhook serving certificate loaded", zap.Time("notAfter", c.Leaf.NotAfter))
	return nil
}
