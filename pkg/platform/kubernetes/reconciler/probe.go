package reconciler

import (
	"context"
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
	"ebb.dev/ebb/pkg/proxy/proxycore"
)

// probeTransport probes queue-proxies; no keep-alive: one probe per pod.
var probeTransport = &http.Transport{DisableKeepAlives: true}

// answered returns the endpoints whose queue-proxy has answered a probe
// (K-Network-Probe: queue → 200 "queue"), probing at once, in parallel,
// those not known yet. A pod that answered once is not probed again: its
// readiness is Kubernetes' from then on, as in Knative's activator.
func (p *Platform) answered(ctx context.Context, eps []endpoint) []endpoint {
	var (
		wg  sync.WaitGroup
		ok  = make([]bool, len(eps))
		uid = make([]types.UID, len(eps))
	)
	p.mu.Lock()
	for i, ep := range eps {
		if ep.Ref != nil {
			uid[i] = ep.Ref.UID
		}
		ok[i] = uid[i] != "" && p.probed[uid[i]] == ep.IP
	}
	p.mu.Unlock()
	for i, ep := range eps {
		if ok[i] {
			continue
		}
		wg.Go(func() { ok[i] = p.probe(ctx, ep.IP) })
	}
	wg.Wait()
	var out []endpoint
	p.mu.Lock()
	for i, ep := range eps {
		if ok[i] {
			out = append(out, ep)
			if uid[i] != "" {
				p.probed[uid[i]] = ep.IP
			}
		}
	}
	p.mu.Unlock()
	return out
}

// probe asks one queue-proxy whether it is ready.
func (p *Platform) probe(ctx context.Context, ip string) bool {
	probe := proxycore.QueueProbe("Ebb-Autoscaler-Probe", p.o.ProbeTimeout)
	return probe.Get(ctx, probeTransport, cluster.HostPort(ip, p.o.QueueServingPort)) == nil
}
