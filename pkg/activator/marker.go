package activator

import (
	"fmt"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/proxy/proxycore"
	"ebb.dev/ebb/pkg/stats"
)

// hopMarks are what the activator and a revision's queue-proxies prove
// to each other with the namespace's proxy secret. Immutable.
type hopMarks struct {
	// request is the K-Proxy-Request value: "activator " + the
	// namespace's proxy secret, or the plain marker without an install
	// secret.
	request []byte
	// notSent trusts a queue-proxy's stats.NotSentHeaderName proof that a
	// request never reached the app (its Value is nil without a secret:
	// nothing is trusted, the field is still removed from every answer).
	notSent proxycore.NotSentMark
}

// notSentKey is stats.NotSentHeaderName in canonical form.
var notSentKey = []byte(stats.NotSentHeaderName)

// markerFor is the hopMarks of the revisions of namespace ns. Callers
// hold ctl.mu (or own a at New).
func (a *Activator) markerFor(ns string) *hopMarks {
	m, err := stats.NewProxyMarker(stats.NamespaceProxySecret(a.ctl.proxySecret, ns))
	if err != nil { // a derived secret is always valid (64 hex digits)
		panic(fmt.Sprintf("activator: the proxy secret of namespace %q: %v", ns, err))
	}
	return &hopMarks{request: m.Value(), notSent: proxycore.NotSentMark{Name: notSentKey, Value: m.NotSent()}}
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
