package kubernetes

import (
	"context"

	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/decider"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
)

// PodStates implements autoscaler.PodStater for the HPA class: every pod
// the Deployment selects, with its phase, readiness, start and
// Ready-transition times, and each container of the pod template with its
// requests and, when the resource metrics API lists the pod, its usage.
// A pod the API does not list, or whose entry lacks a container or a
// resource, has no usage: a missing pod, as for Kubernetes' HPA. The API
// is read once per namespace per Options.MetricsPeriod (ResourceMetrics);
// when it fails, every pod is missing that period.
func (p *Platform) PodStates(ctx context.Context, key autoscaler.RevisionKey) ([]autoscaler.PodState, error) {
	d, err := p.deployment(key)
	if err != nil {
		return nil, err
	}
	var usage map[string]PodUsage
	if p.metrics != nil {
		if usage, err = p.metrics.Namespace(ctx, key.Namespace); err != nil {
			p.log.Debug("resource metrics unavailable; cpu and memory have no samples", zap.String("revision", key.String()), zap.Error(err))
		}
	}
	pods := p.inf.podsOf(d)
	out := make([]autoscaler.PodState, 0, len(pods))
	for _, pod := range pods {
		out = append(out, podState(pod, d, usage, p.o.QueueAdminPort))
	}
	return out, nil
}

// podState is one pod's state and containers (pure: tested directly).
func podState(pod *corev1.Pod, d *appsv1.Deployment, usage map[string]PodUsage, adminPort int32) autoscaler.PodState {
	st := autoscaler.PodState{Pod: autoscaler.Pod{Name: pod.Name, StatsAddr: cluster.HostPort(pod.Status.PodIP, adminPort)},
		Phase: string(pod.Status.Phase), Ready: cluster.PodReady(pod), Deleting: pod.DeletionTimestamp != nil}
	if pod.Status.StartTime != nil {
		st.Started = pod.Status.StartTime.Time
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			st.ReadySince = c.LastTransitionTime.Time
		}
	}
	u, listed := usage[pod.Name]
	tmpl := d.Spec.Template.Spec.Containers
	st.Containers = make([]decider.ContainerSample, len(tmpl))
	var used []float64 // the usages CPU and Memory point at: one allocation a pod
	if listed {
		used = make([]float64, 0, 2*len(tmpl))
	}
	for i, c := range tmpl {
		cs := decider.ContainerSample{Name: c.Name}
		if q, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
			cs.CPURequest = q.AsApproximateFloat64()
		}
		if q, ok := c.Resources.Requests[corev1.ResourceMemory]; ok {
			cs.MemoryRequest = q.AsApproximateFloat64()
		}
		if listed {
			if cpu, ok := u.Resource(string(corev1.ResourceCPU), c.Name); ok {
				used = append(used, float64(cpu)/1000)
				cs.CPU = &used[len(used)-1]
			}
			if mem, ok := u.Resource(string(corev1.ResourceMemory), c.Name); ok {
				used = append(used, float64(mem)/1000)
				cs.Memory = &used[len(used)-1]
			}
		}
		st.Containers[i] = cs
	}
	return st
}
