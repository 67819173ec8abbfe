package resourcemetrics

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
	"ebb.dev/ebb/pkg/scaling/decider"
)

// PodState is what the HPA class reads of one pod: its phase, readiness,
// start and Ready-transition times, and each container of the
// Deployment's pod template with the pod's own requests (as Kubernetes'
// HPA reads them: a namespace's LimitRange may have set them at admission,
// and the template may have changed since; a container the pod lists
// without one has none) and, when the resource metrics API lists the pod
// (usage), its usage. A pod the API does not list, or whose entry lacks a
// container or a resource, has no usage: a missing pod, as for Kubernetes'
// HPA. Its stats are read on the queue-proxy's admin port.
func PodState(pod *corev1.Pod, d *appsv1.Deployment, usage map[string]PodUsage, adminPort int32) autoscaler.PodState {
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
		requests := podRequests(pod, c.Name)
		if q, ok := requests[corev1.ResourceCPU]; ok {
			cs.CPURequest = q.AsApproximateFloat64()
		}
		if q, ok := requests[corev1.ResourceMemory]; ok {
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

// podRequests are the requests of the pod's container name (nil when the
// pod has no such container, or it has none).
func podRequests(pod *corev1.Pod, name string) corev1.ResourceList {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return pod.Spec.Containers[i].Resources.Requests
		}
	}
	return nil
}
