package reconciler

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster/clustertest"
	"ebb.dev/ebb/pkg/platform/kubernetes/resourcemetrics"
)

// usageSource is a resourcemetrics.Source that lists the same usage for
// every namespace.
type usageSource map[string]resourcemetrics.PodUsage

func (u usageSource) ListPodMetrics(context.Context, string) (map[string]resourcemetrics.PodUsage, error) {
	return u, nil
}

// PodStates: every pod the Deployment selects, with the usage the metrics
// API lists for it (resourcemetrics.PodState reads each).
func TestPodStates(t *testing.T) {
	d := clustertest.Deployment("hello", 2, nil)
	used := usageSource{"hello-1": {Containers: []resourcemetrics.ContainerUsage{{Name: d.Spec.Template.Spec.Containers[0].Name,
		CPUMilli: 250, HasCPU: true}}}}
	h := start(t, Options{Metrics: used}, d, clustertest.ReadyPod("hello", "hello-1", "10.0.0.1"),
		clustertest.ReadyPod("hello", "hello-2", "10.0.0.2"))
	for _, s := range podStatesOf(t, h, 2) {
		cpu := s.Containers[0].CPU
		if got := cpu != nil && *cpu == 0.25; got != (s.Name == "hello-1") || s.StatsAddr == "" {
			t.Errorf("%s: cpu %v, stats at %q; want 0.25 for hello-1 alone (the only one listed)", s.Name, cpu, s.StatsAddr)
		}
	}
}

// TestPodStatesReadThePodsRequests: through the pod cache (its
// transform), each pod's own cpu request reaches the HPA class: one a
// LimitRange set at admission counts, though the template has none; a pod
// without one has none.
func TestPodStatesReadThePodsRequests(t *testing.T) {
	d := clustertest.Deployment("hello", 2, nil)
	app := d.Spec.Template.Spec.Containers[0].Name
	withRequest := clustertest.ReadyPod("hello", "hello-1", "10.0.0.1")
	withRequest.Spec.Containers = []corev1.Container{{Name: app, Image: "x", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("150m")}}}}
	without := clustertest.ReadyPod("hello", "hello-2", "10.0.0.2")
	without.Spec.Containers = []corev1.Container{{Name: app, Image: "x"}}
	h := start(t, Options{}, d, withRequest, without)
	for _, s := range podStatesOf(t, h, 2) {
		want := map[string]float64{"hello-1": 0.15, "hello-2": 0}[s.Name]
		if got := s.Containers[0].CPURequest; got != want {
			t.Errorf("%s: cpu request %v, want %v (the pod's own)", s.Name, got, want)
		}
	}
}

// A Deployment without the queue-proxy sidecar (an HPA-class revision on
// cpu) keeps the user's Service: Ebb creates no Service or slice, takes
// back the ones it made, and asking for the activator changes nothing.
func TestSidecarlessLeavesServicesAlone(t *testing.T) {
	d := clustertest.Deployment("hello", 1, nil)
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "php-apache"}}
	mine := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "hello-private", Namespace: "default",
		Labels: map[string]string{managedByLabel: managedBy, revisionLabel: "hello"}}}
	theirs := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default", Labels: map[string]string{"app": "hello"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "hello"}}}
	h := start(t, Options{}, d, mine, theirs)
	eventually(t, "Ebb's own Service removed", func() bool {
		_, err := h.client.CoreV1().Services("default").Get(context.Background(), "hello-private", metav1.GetOptions{})
		return err != nil
	})
	if err := h.p.SetActivatorInPath(context.Background(), hello, true); err != nil {
		t.Errorf("SetActivatorInPath on a sidecarless revision: %v", err)
	}
	svc, err := h.client.CoreV1().Services("default").Get(context.Background(), "hello", metav1.GetOptions{})
	if err != nil || svc.Spec.Selector["app"] != "hello" || svc.Labels[managedByLabel] != "" {
		t.Errorf("the user's Service changed: %+v, %v", svc, err)
	}
	sls, _ := h.client.DiscoveryV1().EndpointSlices("default").List(context.Background(), metav1.ListOptions{})
	if len(sls.Items) != 0 {
		t.Errorf("Ebb wrote %d EndpointSlices for a sidecarless revision", len(sls.Items))
	}
	if err := h.p.Scale(context.Background(), hello, 0); err == nil {
		t.Error("a scale to zero of a sidecarless revision was accepted; nothing could wake it")
	}
}

// podStatesOf waits until PodStates lists n pods of hello, and returns them.
func podStatesOf(t *testing.T, h *harness, n int) []autoscaler.PodState {
	t.Helper()
	var states []autoscaler.PodState
	eventually(t, fmt.Sprintf("%d pods listed", n), func() bool {
		var err error
		states, err = h.p.PodStates(context.Background(), hello)
		return err == nil && len(states) == n
	})
	return states
}
