package kubernetes

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/decider"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster/clustertest"
)

var metricsAt = time.Date(2026, 11, 25, 7, 0, 0, 0, time.UTC)

// podMetrics is a PodMetrics of ns/name; containers are name, cpu, memory
// triples, "" for a resource the entry does not name.
func podMetrics(ns, name string, containers ...[3]string) *metricsv1beta1.PodMetrics {
	m := &metricsv1beta1.PodMetrics{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Timestamp: metav1.NewTime(metricsAt), Window: metav1.Duration{Duration: 15 * time.Second}}
	for _, c := range containers {
		cm := metricsv1beta1.ContainerMetrics{Name: c[0], Usage: corev1.ResourceList{}}
		if c[1] != "" {
			cm.Usage[corev1.ResourceCPU] = resource.MustParse(c[1])
		}
		if c[2] != "" {
			cm.Usage[corev1.ResourceMemory] = resource.MustParse(c[2])
		}
		m.Containers = append(m.Containers, cm)
	}
	return m
}

func TestPodUsageResource(t *testing.T) {
	items := []metricsv1beta1.PodMetrics{
		*podMetrics("ns", "two", [3]string{"app", "250m", "64Mi"}, [3]string{"sidecar", "50m", "16Mi"}),
		*podMetrics("ns", "no-containers"),
		*podMetrics("ns", "sidecar-no-cpu", [3]string{"app", "100m", "1Mi"}, [3]string{"sidecar", "", "1Mi"}),
	}
	byPod := UsageByPod(items)
	type q struct{ pod, resource, container string }
	type a struct {
		v  int64
		ok bool
	}
	tests := []struct {
		q    q
		want a
	}{
		{q{"two", "cpu", ""}, a{300, true}},
		{q{"two", "memory", ""}, a{80 * 1024 * 1024 * 1000, true}},
		{q{"two", "cpu", "sidecar"}, a{50, true}},
		{q{"two", "cpu", "other"}, a{0, false}},           // the named container is not listed
		{q{"no-containers", "cpu", ""}, a{0, false}},      // an empty entry is a missing pod
		{q{"sidecar-no-cpu", "cpu", ""}, a{0, false}},     // any container without the resource
		{q{"sidecar-no-cpu", "cpu", "app"}, a{100, true}}, // but the named one has it
		{q{"sidecar-no-cpu", "memory", ""}, a{2 * 1024 * 1024 * 1000, true}},
	}
	for _, tt := range tests {
		u := byPod[tt.q.pod]
		v, ok := u.Resource(tt.q.resource, tt.q.container)
		if diff := cmp.Diff(tt.want, a{v, ok}, cmp.AllowUnexported(a{})); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", tt.q, diff)
		}
	}
	if got := byPod["two"]; !got.Timestamp.Equal(metricsAt) || got.Window != 15*time.Second {
		t.Errorf("timestamp, window = %v, %v", got.Timestamp, got.Window)
	}
}

// One List per namespace per period, however many callers; each
// namespace lists its own; a failed List is an error for the period.
func TestResourceMetricsListsOncePerNamespacePerPeriod(t *testing.T) {
	client := metricsfake.NewSimpleClientset()
	// The fake lists PodMetrics under the API's resource name, "pods";
	// NewSimpleClientset would file them under a guessed "podmetricses".
	gvr := metricsv1beta1.SchemeGroupVersion.WithResource("pods")
	for _, m := range []*metricsv1beta1.PodMetrics{
		podMetrics("a", "p1", [3]string{"app", "100m", "10Mi"}),
		podMetrics("a", "p2", [3]string{"app", "300m", "10Mi"}),
		podMetrics("b", "q1", [3]string{"app", "1", "1Gi"}),
	} {
		if err := client.Tracker().Create(gvr, m, m.Namespace); err != nil {
			t.Fatal(err)
		}
	}
	var lists atomic.Int32
	var fail atomic.Bool
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		lists.Add(1)
		if fail.Load() {
			return true, nil, errors.New("the server is currently unable to handle the request")
		}
		return false, nil, nil
	})
	var mu sync.Mutex
	now := metricsAt
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	r := NewResourceMetrics(TypedPodMetrics(client.MetricsV1beta1()), 15*time.Second, clock)
	ctx := context.Background()

	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			pods, err := r.Namespace(ctx, "a")
			if err != nil || len(pods) != 2 {
				t.Errorf("Namespace(a) = %d pods, %v; want 2", len(pods), err)
			}
		})
	}
	wg.Wait()
	if got := lists.Load(); got != 1 {
		t.Errorf("8 callers in one period: %d Lists, want 1", got)
	}
	if pods, err := r.Namespace(ctx, "b"); err != nil || len(pods) != 1 {
		t.Errorf("Namespace(b) = %v, %v", pods, err)
	}
	if got := lists.Load(); got != 2 {
		t.Errorf("a second namespace: %d Lists in all, want 2", got)
	}
	mu.Lock()
	now = now.Add(15 * time.Second)
	mu.Unlock()
	fail.Store(true)
	if _, err := r.Namespace(ctx, "a"); err == nil {
		t.Error("a failed List: no error")
	}
	if _, err := r.Namespace(ctx, "a"); err == nil || lists.Load() != 3 {
		t.Errorf("the failure holds for its period: err %v, %d Lists (want 3)", err, lists.Load())
	}
}

// PodStates: every selected pod with its state, the template's requests,
// and the usage the metrics API lists; a pod it does not list is missing.
func TestPodStates(t *testing.T) {
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

	mc := metricsfake.NewSimpleClientset()
	gvr := metricsv1beta1.SchemeGroupVersion.WithResource("pods")
	pm := podMetrics("default", "hello-1", [3]string{"app", "250m", "32Mi"}, [3]string{"queue-proxy", "5m", "8Mi"})
	if err := mc.Tracker().Create(gvr, pm, "default"); err != nil {
		t.Fatal(err)
	}
	h := start(t, Options{Metrics: TypedPodMetrics(mc.MetricsV1beta1()), Now: func() time.Time { return metricsAt }}, d, p1, p2, p3)
	var states []autoscaler.PodState
	eventually(t, "three pods listed", func() bool {
		var err error
		states, err = h.p.PodStates(context.Background(), hello)
		return err == nil && len(states) == 3
	})
	byName := map[string]autoscaler.PodState{}
	for _, s := range states {
		byName[s.Name] = s
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

// A Deployment without the queue-proxy sidecar (an HPA-class revision on
// cpu) keeps the user's Service: Ebb creates no Service or slice, takes
// back the ones it made, and asking for the activator changes nothing.
func TestSidecarlessLeavesServicesAlone(t *testing.T) {
	d := clustertest.Deployment("hello", 1, nil)
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "php-apache"}}
	mine := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "hello-private", Namespace: "default",
		Labels: map[string]string{ManagedByLabel: ManagedBy, RevisionLabel: "hello"}}}
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
	if err != nil || svc.Spec.Selector["app"] != "hello" || svc.Labels[ManagedByLabel] != "" {
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
