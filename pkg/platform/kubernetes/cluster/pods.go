package cluster

import (
	"time"

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
// time, phase, address and conditions (an informer's transform). Thousands
// of pods then cost little memory.
func PodTransform(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, Labels: p.Labels,
			ResourceVersion: p.ResourceVersion, DeletionTimestamp: p.DeletionTimestamp},
		Status: corev1.PodStatus{Phase: p.Status.Phase, PodIP: p.Status.PodIP, StartTime: p.Status.StartTime,
			Conditions: p.Status.Conditions},
	}, nil
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
