package autoscaler

import (
	"context"

	"go.uber.org/zap"
)

// DeletionCoster is an optional extension of Platform for platforms whose
// scale-down picks the replicas to remove by a cost (Kubernetes: the
// ReplicaSet controller removes the pods of lowest
// controller.kubernetes.io/pod-deletion-cost first). Before it writes a
// scale-down, the autoscaler reads every ready replica's requests in
// flight from its queue-proxy and hands them over: the busiest stay, the
// idlest go (and the one a parked revision keeps is its busiest).
type DeletionCoster interface {
	SetDeletionCosts(ctx context.Context, rev RevisionKey, loads []PodLoad) error
}

// PodLoad is one ready replica's requests in flight (the queue-proxy's
// average over its last report); Known is false when its queue-proxy did
// not answer (such a replica costs nothing to remove).
type PodLoad struct {
	Name     string
	InFlight float64
	Known    bool
}

// maxCostedPods bounds the replicas read before a scale-down: beyond it
// the platform's own choice stands (a revision that large loses a few
// replicas of many, each likely as busy as the next).
const maxCostedPods = 100

// costPods hands the ready replicas' loads to a DeletionCoster before a
// scale-down to desired (above 0: at 0 every replica goes). A failure is
// logged and never holds the scale.
func (r *revision) costPods(ctx context.Context, desired int32) {
	dc, ok := r.deps.platform.(DeletionCoster)
	if !ok || desired == 0 {
		return
	}
	pods, err := r.deps.platform.ReadyPods(ctx, r.key)
	if err != nil || len(pods) <= int(desired) || len(pods) > maxCostedPods {
		return
	}
	sc := scratchPool.Get().(*scratch)
	defer sc.release()
	scrapeInto(sc.scrapeCtx(ctx, r.deps.scrapeTimeout), r.deps.scraper, pods, sc)
	loads := make([]PodLoad, len(pods))
	for i, p := range pods {
		loads[i] = PodLoad{Name: p.Name, InFlight: sc.stats[i].AverageConcurrency, Known: sc.errs[i] == nil}
	}
	if err := dc.SetDeletionCosts(ctx, r.key, loads); err != nil {
		r.log().Warn("setting the pods' deletion costs failed; the platform picks the pods to remove", zap.Error(err))
	}
}
