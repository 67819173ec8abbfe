package activator

import (
	"context"
	"time"

	"ebb.dev/ebb/pkg/proxy/proxycore"
)

// Prober asks a replica's queue-proxy whether it is ready.
type Prober interface {
	// Probe reports whether the queue-proxy at address answers ready. It
	// returns within its own timeout; ctx ends it early.
	Probe(ctx context.Context, address string) bool
}

// startProbe starts a probe loop for a replica that is not usable. Callers
// hold controlPlane.mu.
func (a *Activator) startProbe(rev *revision, st *replicaState) {
	c := &a.ctl
	if c.ctx == nil || st.stopProbe != nil {
		return
	}
	ctx, cancel := context.WithCancel(c.ctx)
	st.stopProbe = cancel
	c.probes.Go(func() {
		defer cancel()
		a.probeLoop(ctx, rev, st.addr)
	})
}

// probeLoop probes addr at once and then every ProbeInterval until it
// answers ready or ctx ends (the replica vanished, or shutdown).
func (a *Activator) probeLoop(ctx context.Context, rev *revision, addr string) {
	t := a.clock.NewTicker(a.opts.ProbeInterval)
	defer t.Stop()
	for {
		if a.prober.Probe(ctx, addr) {
			a.metrics.probes.ready.Inc()
			if ctx.Err() == nil {
				a.markReady(rev, addr)
			}
			return
		}
		a.metrics.probes.notReady.Inc()
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// httpProber probes with Knative's queue-proxy probe (proxycore's probe
// client): GET /healthz with K-Network-Probe: queue; ready is 200 with the
// body "queue".
type httpProber struct {
	clients *clientCache
	probe   proxycore.Probe
}

func newHTTPProber(clients *clientCache, timeout time.Duration) *httpProber {
	return &httpProber{clients: clients, probe: proxycore.QueueProbe("Ebb-Activator-Probe", timeout)}
}

func (p *httpProber) Probe(ctx context.Context, addr string) bool {
	return ctx.Err() == nil && p.probe.Do(p.clients.get(addr)) == nil
}
