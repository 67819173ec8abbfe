package cluster

import (
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	"ebb.dev/ebb/pkg/config"
)

// PodReady: the pod serves (Running, Ready, with an address) and is not
// terminating. Only such pods are scraped and put behind the Service.
func PodReady(p *corev1.Pod) bool {
	return PodAddressed(p) && p.Status.Phase == corev1.PodRunning && podCondition(p, corev1.PodReady)
}

// PodAddressed: the pod has an address and is not terminating; the
// activator probes such pods itself before Kubernetes marks them ready.
func PodAddressed(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.PodIP != "" &&
		(p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodPending)
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// PodTransform keeps what Ebb reads of a pod: its identity, labels, start
// time, phase, address and conditions (with status.resize, which older API
// servers write instead of the resize conditions), the annotation of a
// parked pod (config.PodAnnotationParkedFrom), whether it lacks the
// queue-proxy it opted in to (SidecarMissing), and while it is not ready its
// containers' images and states (StartFailure) (an informer's transform). Thousands
// of pods then cost little memory.
func PodTransform(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	slim := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, Labels: p.Labels,
			ResourceVersion: p.ResourceVersion, DeletionTimestamp: p.DeletionTimestamp},
		Spec: corev1.PodSpec{NodeName: p.Spec.NodeName}, // where a pod that does not start waits (StalledStart)
		Status: corev1.PodStatus{Phase: p.Status.Phase, PodIP: p.Status.PodIP, StartTime: p.Status.StartTime,
			Conditions: p.Status.Conditions, Resize: p.Status.Resize},
	}
	if v, ok := p.Annotations[config.PodAnnotationParkedFrom]; ok { // parked: a wake reads it
		slim.Annotations = map[string]string{config.PodAnnotationParkedFrom: v}
	}
	if bare(p) {
		if slim.Annotations == nil {
			slim.Annotations = map[string]string{}
		}
		slim.Annotations[sidecarMissingMark] = ""
	}
	if !podCondition(p, corev1.PodReady) {
		// Why it does not start (StartFailure); a ready pod's are not kept.
		slim.Spec.InitContainers, slim.Status.InitContainerStatuses = keptImages(p.Spec.InitContainers), keptStatuses(p.Status.InitContainerStatuses)
		slim.Spec.Containers, slim.Status.ContainerStatuses = keptImages(p.Spec.Containers), keptStatuses(p.Status.ContainerStatuses)
	}
	return slim, nil
}

// sidecarMissingMark marks, in an informer's cache only, an opted-in pod
// without the queue-proxy (PodTransform sets it, SidecarMissing reads
// it): a ready pod's containers are not kept. Nothing writes a cached pod
// back (pods are patched), so the API never sees it.
const sidecarMissingMark = "cache.autoscaling.ebb.dev/sidecar-missing"

// bare: the pod is opted in to injection (labelled config.LabelEnabled,
// which the webhook's objectSelector selects) and has no queue-proxy
// container: the webhook never injected it (docs/kubernetes.md, "Failure
// policy").
func bare(p *corev1.Pod) bool {
	if p.Labels[config.LabelEnabled] != "true" {
		return false
	}
	for _, c := range p.Spec.Containers {
		if c.Name == config.QueueProxyContainer {
			return false
		}
	}
	return true
}

// SidecarMissing: a pod as PodTransform keeps it is opted in to
// injection and runs without the queue-proxy, so nothing of Ebb's can
// reach it (the webhook never saw it: created before Ebb was installed,
// while its MutatingWebhookConfiguration was missing, with its
// failurePolicy changed from Fail, or in a namespace Ebb never injects
// into). A pod not from PodTransform is never marked.
func SidecarMissing(p *corev1.Pod) bool {
	_, ok := p.Annotations[sidecarMissingMark]
	return ok
}

// PodTransformWithRequests returns PodTransform that also keeps each
// container's cpu and memory requests, by name (a container without either
// is left out): the HPA class computes a utilization from the pods' own
// requests, which a LimitRange may have set at admission and which the pod
// template does not show. Pods with the same requests (a Deployment's)
// share one read-only copy of them, kept in a bounded table, so that the
// cache of every pod costs next to nothing more: a pod's entry is a slice
// header.
func PodTransformWithRequests() func(any) (any, error) {
	shared, err := lru.New[string, []corev1.Container](maxSharedRequests)
	if err != nil {
		panic(err) // only for a size < 1
	}
	return func(obj any) (any, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return obj, nil
		}
		slim, _ := PodTransform(p)
		key := requestsKey(p.Spec.Containers)
		if key == "" {
			return slim, nil
		}
		cs, found := shared.Get(key)
		if !found {
			cs = keptRequests(p.Spec.Containers)
			shared.Add(key, cs)
		}
		sp := slim.(*corev1.Pod)
		if sp.Spec.Containers != nil { // not ready: the images too, in a copy of its own
			cs = withImages(cs, sp.Spec.Containers)
		}
		sp.Spec.Containers = cs
		return slim, nil
	}
}

// maxSharedRequests bounds the table of distinct requests (a cluster has
// about one per Deployment revision); a pod keeps its copy when the table
// forgets it.
const maxSharedRequests = 4096

var requestResources = [...]corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// requestsKey names the cpu and memory requests of cs ("" when none has
// either).
func requestsKey(cs []corev1.Container) string {
	var b strings.Builder
	for _, c := range cs {
		cpu, hasCPU := c.Resources.Requests[corev1.ResourceCPU]
		mem, hasMem := c.Resources.Requests[corev1.ResourceMemory]
		if !hasCPU && !hasMem {
			continue
		}
		b.WriteString(c.Name)
		b.WriteByte(' ')
		if hasCPU {
			b.WriteString(cpu.String())
		}
		b.WriteByte(' ')
		if hasMem {
			b.WriteString(mem.String())
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// keptRequests are the containers of cs that request cpu or memory, with
// their names and those requests only.
func keptRequests(cs []corev1.Container) []corev1.Container {
	var out []corev1.Container
	for _, c := range cs {
		var req corev1.ResourceList
		for _, r := range requestResources {
			if q, ok := c.Resources.Requests[r]; ok {
				if req == nil {
					req = corev1.ResourceList{}
				}
				req[r] = q.DeepCopy()
			}
		}
		if req != nil {
			out = append(out, corev1.Container{Name: c.Name, Resources: corev1.ResourceRequirements{Requests: req}})
		}
	}
	return out
}

// SelectedPods lists the pods a Deployment selects (none for an empty or
// invalid selector).
func SelectedPods(pods corelisters.PodLister, d *appsv1.Deployment) []*corev1.Pod {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() {
		return nil
	}
	ps, _ := pods.Pods(d.Namespace).List(sel) // a lister never fails
	return ps
}

// TimeoutOf is the revision's request timeout: the queue-proxy sidecar's
// literal REVISION_TIMEOUT_SECONDS when it has one, read by its one rule
// (config.ParseTimeoutSeconds), else Knative's 300s.
func TimeoutOf(d *appsv1.Deployment) time.Duration {
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Name != config.EnvRevisionTimeout || e.ValueFrom != nil {
				continue
			}
			if d, err := config.ParseTimeoutSeconds(config.EnvRevisionTimeout, e.Value); err == nil {
				return d // the queue-proxy's rule: a value it refuses never reaches it
			}
		}
	}
	return config.DefaultRevisionTimeout
}
