// Package proxysecret keeps the install's proxy secret on a cluster: the
// Secret ebb-proxy-secret (stats.ProxySecretName) in Ebb's namespace,
// whose key "secret" the activators read (mounted as a file) and from
// which the autoscaler's webhook derives each namespace's secret for the
// queue-proxies it injects (stats.NamespaceProxySecret). The Keeper makes
// the Secret, with 32 random bytes in hex, when it is missing, so an
// install needs no hand step; it never overwrites one (an operator
// rotates it by replacing or deleting it), and it reads it again every
// minute.
//
// It reads and writes only that Secret: create (which RBAC cannot limit
// by name) and get of that name.
package proxysecret

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"ebb.dev/ebb/pkg/stats"
)

// Options configure a Keeper.
type Options struct {
	Client    k8s.Interface
	Namespace string // Ebb's namespace
	Name      string // the Secret (stats.ProxySecretName)
	Logger    *zap.Logger
	// Period is the time between reads once the secret is known (1m);
	// Retry the time between attempts until then (1s).
	Period, Retry time.Duration
}

// Keeper holds the install's proxy secret, as last read.
type Keeper struct {
	o   Options
	mu  sync.Mutex
	cur string
	err error // why there is no secret yet (nil once there is one)
}

// errNotLoaded is Secret's error before the first successful read.
var errNotLoaded = errors.New("the install's proxy secret is not loaded yet")

// New makes a Keeper; Run reads the Secret.
func New(o Options) *Keeper {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Period <= 0 {
		o.Period = time.Minute
	}
	if o.Retry <= 0 {
		o.Retry = time.Second
	}
	return &Keeper{o: o, err: errNotLoaded}
}

// Secret is the install's proxy secret, or why there is none yet.
func (k *Keeper) Secret() (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cur == "" {
		return "", k.err
	}
	return k.cur, nil
}

// Run reads (and, when missing, makes) the Secret until ctx ends: every
// Retry until it has a secret, then every Period. A Secret that cannot be
// read, or whose value is not a valid proxy secret, is logged and the
// secret last read stays.
func (k *Keeper) Run(ctx context.Context) {
	for {
		err := k.sync(ctx)
		if err != nil {
			k.o.Logger.Warn("the proxy secret cannot be used", zap.String("secret", k.o.Namespace+"/"+k.o.Name), zap.Error(err))
		}
		wait := k.o.Period
		if _, serr := k.Secret(); serr != nil {
			wait = k.o.Retry
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// sync reads the Secret once, making it when it is missing.
func (k *Keeper) sync(ctx context.Context) error {
	secrets := k.o.Client.CoreV1().Secrets(k.o.Namespace)
	s, err := secrets.Get(ctx, k.o.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		s, err = k.create(ctx)
		if apierrors.IsAlreadyExists(err) { // another replica made it first
			s, err = secrets.Get(ctx, k.o.Name, metav1.GetOptions{})
		}
	}
	if err == nil {
		err = k.take(s)
	}
	if err != nil {
		k.mu.Lock()
		if k.cur == "" {
			k.err = fmt.Errorf("%w: %v", errNotLoaded, err)
		}
		k.mu.Unlock()
	}
	return err
}

func (k *Keeper) create(ctx context.Context) (*corev1.Secret, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: k.o.Name, Namespace: k.o.Namespace, Labels: map[string]string{
			"app.kubernetes.io/part-of": "ebb", "app.kubernetes.io/managed-by": "ebb"}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{stats.ProxySecretKey: []byte(hex.EncodeToString(b[:]))},
	}
	created, err := k.o.Client.CoreV1().Secrets(k.o.Namespace).Create(ctx, s, metav1.CreateOptions{})
	if err == nil {
		k.o.Logger.Info("made the install's proxy secret", zap.String("secret", k.o.Namespace+"/"+k.o.Name))
	}
	return created, err
}

// take checks the Secret's value and keeps it.
func (k *Keeper) take(s *corev1.Secret) error {
	v := string(s.Data[stats.ProxySecretKey])
	if v == "" {
		return fmt.Errorf("secret %s/%s has no key %q: put the install's proxy secret there (or delete the Secret: it is made again)",
			k.o.Namespace, k.o.Name, stats.ProxySecretKey)
	}
	if err := stats.ValidateProxySecret(v); err != nil {
		return fmt.Errorf("secret %s/%s, key %q: %w", k.o.Namespace, k.o.Name, stats.ProxySecretKey, err)
	}
	k.mu.Lock()
	changed := k.cur != "" && k.cur != v
	k.cur, k.err = v, nil
	k.mu.Unlock()
	if changed {
		k.o.Logger.Info("the install's proxy secret changed: pods injected from now on get the new namespace secrets; roll the revisions",
			zap.String("secret", k.o.Namespace+"/"+k.o.Name))
	}
	return nil
}
