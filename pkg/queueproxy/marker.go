package queueproxy

import (
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/stats"
)

// proxyMarker decides whether a request came through an activator, from
// its K-Proxy-Request header checked against the per-install secret
// (ACTIVATOR_PROXY_SECRET), and strips the header: neither the marker nor
// the secret ever reaches the app. A forged marker (no or a wrong secret)
// counts the request as direct, so a client cannot have its load
// subtracted from what the autoscaler sees.
type proxyMarker struct{ m stats.ProxyMarker }

// newProxyMarker builds the check for c.ProxySecret (validated by Load).
func newProxyMarker(c Config, log *zap.Logger) (proxyMarker, error) {
	m, err := stats.NewProxyMarker(c.ProxySecret)
	if err != nil {
		return proxyMarker{}, err
	}
	if !m.Armed() {
		log.Warn("no proxy secret: the activator's K-Proxy-Request marker is never honoured, every request counts as direct",
			zap.String("env", stats.ProxySecretEnv),
			zap.String("fix", "set "+stats.ProxySecretEnv+" to the activator's secret (on Kubernetes: env from the Secret "+
				stats.ProxySecretName+", key "+stats.ProxySecretKey+"; see docs/kubernetes.md)"))
	}
	return proxyMarker{m: m}, nil
}

// arrival classifies a request whose K-Proxy-Request value is v (nil when
// absent, as found by inspect) and deletes that header from h. It does
// not allocate.
func (pm proxyMarker) arrival(h *fasthttp.RequestHeader, v []byte) stats.Arrival {
	if v == nil {
		return stats.Direct
	}
	a := pm.m.Arrival(v) // before Del: v points into h
	h.Del(stats.ProxyHeaderName)
	return a
}
