package resourcemetrics

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"
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
	byPod := usageByPod(items)
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
	r := NewReader(typed(client.MetricsV1beta1()), 15*time.Second, clock)
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
