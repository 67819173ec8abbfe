package activator

import (
	"fmt"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/stats"
)

// markerFor is the K-Proxy-Request value for the revisions of namespace
// ns: "activator " + the namespace's proxy secret, or the plain marker
// without an install secret. Callers hold ctl.mu (or own a at New).
func (a *Activator) markerFor(ns string) *[]byte {
	m, err := stats.NewProxyMarker(stats.NamespaceProxySecret(a.ctl.proxySecret, ns))
	if err != nil { // a derived secret is always valid (64 hex digits)
		panic(fmt.Sprintf("activator: the proxy secret of namespace %q: %v", ns, err))
	}
	v := m.Value()
	return &v
}

// SetProxySecret replaces the install's proxy secret (ACTIVATOR_PROXY_SECRET_FILE
// re-read): every revision's marker follows at once. An invalid secret is
// refused and the current one stays.
func (a *Activator) SetProxySecret(secret string) error {
	if err := stats.ValidateProxySecret(secret); err != nil {
		return fmt.Errorf("activator: proxy secret: %w", err)
	}
	c := &a.ctl
	c.mu.Lock()
	defer c.mu.Unlock()
	if secret == c.proxySecret {
		return nil
	}
	c.proxySecret = secret
	for _, rev := range c.revs {
		rev.marker.Store(a.markerFor(rev.ns))
	}
	a.log.Info("proxy secret replaced: every revision's marker follows", zap.Bool("armed", secret != ""))
	return nil
}
