package reconciler

import (
	"context"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/platform/kubernetes/resourcemetrics"
)

// PodStates implements autoscaler.PodStater for the HPA class: every pod
// the Deployment selects, as resourcemetrics.PodState reads it. The
// resource metrics API is read once per namespace per
// Options.MetricsPeriod (resourcemetrics.Reader); when it fails, every pod
// is missing that period.
func (p *Platform) PodStates(ctx context.Context, key autoscaler.RevisionKey) ([]autoscaler.PodState, error) {
	d, err := p.deployment(key)
	if err != nil {
		return nil, err
	}
	var usage map[string]resourcemetrics.PodUsage
	if p.metrics != nil {
		if usage, err = p.metrics.Namespace(ctx, key.Namespace); err != nil {
			p.log.Debug("resource metrics unavailable; cpu and memory have no samples", zap.String("revision", key.String()), zap.Error(err))
		}
	}
	pods := p.inf.podsOf(d)
	out := make([]autoscaler.PodState, 0, len(pods))
	for _, pod := range pods {
		out = append(out, resourcemetrics.PodState(pod, d, usage, p.o.QueueAdminPort))
	}
	return out, nil
}
