package resourcemetrics

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster/clustertest"
	"ebb.dev/ebb/pkg/scaling/decider"
)

// PodState: a pod's state, its own requests, and the usage the metrics
// API lists; a pod it does not list is missing.
func TestPodState(t *testing.T) {
	d := clustertest.Deployment("hello", 3, nil)
	d.Spec.Template.Spec.Containers = []corev1.Container{
		{Name: "app", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}},
		{Name: "queue-proxy", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("25m")}}},
	}
	started := metav1.NewTime(metricsAt.Add(-time.Minute))
	readyAt := metav1.NewTime(metricsAt.Add(-50 * time.Second))
	p1 := clustertest.ReadyPod("hello", "hello-1", "10.0.0.1")
	p1.Status.StartTime = &started
	p1.Status.Conditions[0].LastTransitionTime = readyAt
	p2 := clustertest.ReadyPod("hello", "hello-2", "10.0.0.2") // not in the metrics API
	p3 := clustertest.ReadyPod("hello", "hello-3", "")
	p3.Status.Phase, p3.Status.Conditions = corev1.PodPending, nil
	for _, p := range []*corev1.Pod{p1, p2, p3} {
		p.Spec.Containers = d.Spec.Template.Spec.Containers
	}

	usage := usageByPod([]metricsv1beta1.PodMetrics{
		*podMetrics("default", "hello-1", [3]string{"app", "250m", "32Mi"}, [3]string{"queue-proxy", "5m", "8Mi"})})
	byName := map[string]autoscaler.PodState{}
	for _, p := range []*corev1.Pod{p1, p2, p3} {
		byName[p.Name] = PodState(p, d, usage, 9090)
	}
	f := func(v float64) *float64 { return &v }
	want := autoscaler.PodState{Pod: autoscaler.Pod{Name: "hello-1", StatsAddr: "10.0.0.1:9090", Started: started.Time},
		Phase: "Running", Ready: true, ReadySince: readyAt.Time,
		Containers: []decider.ContainerSample{
			{Name: "app", CPU: f(0.25), Memory: f(32 << 20), CPURequest: 0.1, MemoryRequest: 64 << 20},
			{Name: "queue-proxy", CPU: f(0.005), Memory: f(8 << 20), CPURequest: 0.025},
		}}
	if diff := cmp.Diff(want, byName["hello-1"], cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("hello-1 (-want +got):\n%s", diff)
	}
	for _, c := range byName["hello-2"].Containers {
		if c.CPU != nil || c.Memory != nil {
			t.Errorf("hello-2, not in the metrics API, has usage %+v", c)
		}
	}
	if s := byName["hello-3"]; s.Phase != "Pending" || s.Ready {
		t.Errorf("hello-3 = %+v, want Pending and not ready", s)
	}
}

// TestPodStateReadsThePodsRequests: the requests are the pod's own, as
// Kubernetes' HPA reads them: one a LimitRange gave the pod at admission
// counts though the template has none, and a pod made before the template
// gained one has none.
func TestPodStateReadsThePodsRequests(t *testing.T) {
	d := clustertest.Deployment("hello", 2, nil)
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app"}}
	limitRanged := clustertest.ReadyPod("hello", "hello-1", "10.0.0.1")
	limitRanged.Spec.Containers = []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}}}
	bare := clustertest.ReadyPod("hello", "hello-2", "10.0.0.2")
	bare.Spec.Containers = []corev1.Container{{Name: "app"}}
	if got := PodState(limitRanged, d, nil, 9090).Containers[0]; got.CPURequest != 0.2 || got.MemoryRequest != 128<<20 {
		t.Errorf("pod with a LimitRange's request: %+v, want 200m and 128Mi", got)
	}
	d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	if got := PodState(bare, d, nil, 9090).Containers[0]; got.CPURequest != 0 || got.MemoryRequest != 0 {
		t.Errorf("pod without a request (the template has one now): %+v, want none", got)
	}
}
