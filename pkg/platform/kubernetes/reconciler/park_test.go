package reconciler

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster/clustertest"
	"ebb.dev/ebb/pkg/platform/kubernetes/resourcemetrics"
)

// patchLog records the pod patches sent, and answers those of the resize
// subresource (with refuse: as an API server that has none).
type patchLog struct {
	mu      sync.Mutex
	patches []sentPatch
	refuse  error
}

type sentPatch struct {
	pod, subresource string
	typ              types.PatchType
	body             string
}

func (l *patchLog) reactors(c *fake.Clientset) {
	c.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pa := a.(k8stesting.PatchAction)
		l.mu.Lock()
		l.patches = append(l.patches, sentPatch{pod: pa.GetName(), subresource: pa.GetSubresource(), typ: pa.GetPatchType(), body: string(pa.GetPatch())})
		refuse := l.refuse
		l.mu.Unlock()
		if pa.GetSubresource() != "resize" {
			return false, nil, nil // annotations: the tracker applies them
		}
		if refuse != nil {
			return true, nil, refuse
		}
		obj, err := c.Tracker().Get(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, pa.GetNamespace(), pa.GetName())
		return true, obj, err
	})
}

func (l *patchLog) resizes() []sentPatch {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []sentPatch
	for _, p := range l.patches {
		if p.subresource == "resize" {
			out = append(out, p)
		}
	}
	return out
}

func requirements(cpu, mem, cpuLimit, memLimit string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuLimit), corev1.ResourceMemory: resource.MustParse(memLimit)},
	}
}

// parkFixture is hello with one ready pod whose app asks for 500m/64Mi
// (limits 1/128Mi) and whose queue-proxy (injected: not in the template)
// asks for 25m/32Mi; the metrics API says the app uses 20Mi.
func parkFixture(t *testing.T, policy corev1.ResourceResizeRestartPolicy, refuse error) (*harness, *patchLog) {
	t.Helper()
	used := usageSource{"hello-1": {Containers: []resourcemetrics.ContainerUsage{
		{Name: "app", MemMilli: 20 << 20 * 1000, HasMemory: true}, {Name: "queue-proxy", MemMilli: 10 << 20 * 1000, HasMemory: true}}}}
	return parkFixtureUsing(t, policy, refuse, Options{Metrics: used})
}

// parkFixtureUsing is parkFixture with the options o (the metrics API's
// usage, a clock).
func parkFixtureUsing(t *testing.T, policy corev1.ResourceResizeRestartPolicy, refuse error, o Options) (*harness, *patchLog) {
	t.Helper()
	d := clustertest.Deployment("hello", 1, nil)
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Resources: requirements("500m", "64Mi", "1", "128Mi")}}
	pod := clustertest.ReadyPod("hello", "hello-1", "10.0.0.1")
	pod.Spec.Containers = []corev1.Container{
		{Name: "app", Resources: requirements("500m", "64Mi", "1", "128Mi"),
			ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
				{ResourceName: corev1.ResourceMemory, RestartPolicy: policy}}},
		{Name: "queue-proxy", Resources: requirements("25m", "32Mi", "1", "64Mi")},
	}
	l := &patchLog{refuse: refuse}
	h := startWith(t, o, l.reactors, d, pod)
	<-h.p.Ready()
	eventually(t, "the pod in the cache", func() bool { return len(h.p.inf.podsOf(d)) == 1 })
	return h, l
}

var parkReq = autoscaler.ParkRequest{Parked: true, CPURequestMilli: 1, MemoryRequestBytes: 16 << 20}

// TestParkResizesInPlace: parking sends one strategic merge patch to the
// pod's resize subresource (CPU to 1m, memory to what each container uses
// but at least 16Mi, limits untouched), after recording the requests it
// had on the pod; waking restores them (the injected sidecar's too) and
// drops the record.
func TestParkResizesInPlace(t *testing.T) {
	h, l := parkFixture(t, corev1.NotRequired, nil)
	ctx := context.Background()
	key := autoscaler.RevisionKey{Namespace: "default", Name: "hello"}
	if err := h.p.Park(ctx, key, parkReq); err != nil {
		t.Fatal(err)
	}
	rs := l.resizes()
	if len(rs) != 1 || rs[0].typ != types.StrategicMergePatchType || rs[0].pod != "hello-1" {
		t.Fatalf("resize patches %+v; want one strategic merge patch of hello-1", rs)
	}
	want := `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"1m","memory":"20Mi"}}},` +
		`{"name":"queue-proxy","resources":{"requests":{"cpu":"1m","memory":"16Mi"}}}]}}`
	if rs[0].body != want {
		t.Errorf("resize patch\n %s\nwant\n %s", rs[0].body, want)
	}
	pod, err := h.client.CoreV1().Pods("default").Get(ctx, "hello-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var from map[string]requests
	if err := json.Unmarshal([]byte(pod.Annotations[config.PodAnnotationParkedFrom]), &from); err != nil {
		t.Fatalf("annotation %q: %v", pod.Annotations[config.PodAnnotationParkedFrom], err)
	}
	if from["app"] != (requests{CPU: "500m", Memory: "64Mi"}) || from["queue-proxy"] != (requests{CPU: "25m", Memory: "32Mi"}) {
		t.Errorf("recorded requests %+v", from)
	}
	if st, ok := h.p.ParkStatus(key); !ok || st.State != autoscaler.ParkStateParked {
		t.Errorf("ParkStatus %+v, %v; want parked", st, ok)
	}
	if err := h.p.Park(ctx, key, autoscaler.ParkRequest{}); err != nil {
		t.Fatal(err)
	}
	rs = l.resizes()
	want = `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"500m","memory":"64Mi"}}},` +
		`{"name":"queue-proxy","resources":{"requests":{"cpu":"25m","memory":"32Mi"}}}]}}`
	if len(rs) != 2 || rs[1].body != want {
		t.Fatalf("resize patches %+v; want the second to restore\n %s", rs, want)
	}
	pod, _ = h.client.CoreV1().Pods("default").Get(ctx, "hello-1", metav1.GetOptions{})
	if _, ok := pod.Annotations[config.PodAnnotationParkedFrom]; ok {
		t.Error("the parked-from annotation stays after the wake")
	}
	if evs := strings.Join(h.events(), "\n"); !strings.Contains(evs, reasonParked) {
		t.Errorf("events %q; want a Parked event", evs)
	}
}

// TestParkWithoutMemoryUsage: without a memory usage (no metrics-server)
// parking lowers the CPU requests only, and the Event and the status say
// that the memory requests stayed and why.
func TestParkWithoutMemoryUsage(t *testing.T) {
	used := usageSource{}
	var mu sync.Mutex
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h, l := parkFixtureUsing(t, corev1.NotRequired, nil, Options{Metrics: used, Now: clock})
	key := autoscaler.RevisionKey{Namespace: "default", Name: "hello"}
	ctx := context.Background()
	if err := h.p.Park(ctx, key, parkReq); err != nil {
		t.Fatal(err)
	}
	want := `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"1m"}}},{"name":"queue-proxy","resources":{"requests":{"cpu":"1m"}}}]}}`
	if rs := l.resizes(); len(rs) != 1 || rs[0].body != want {
		t.Fatalf("resize patches %+v; want one\n %s", rs, want)
	}
	note := "memory request unchanged for app, queue-proxy: no memory usage from the resource metrics API"
	if evs := strings.Join(h.events(), "\n"); !strings.Contains(evs, note) {
		t.Errorf("events %q; want the Parked event to say %q", evs, note)
	}
	if st, ok := h.p.ParkStatus(key); !ok || st.State != autoscaler.ParkStateParked || !strings.Contains(st.Message, note) {
		t.Errorf("ParkStatus %+v, %v; want parked, saying %q", st, ok, note)
	}
	// A retry is due memoryRetry later; with a usage it lowers the memory
	// requests alone, recorded for the wake.
	if h.p.ParkIncomplete(key) {
		t.Error("ParkIncomplete at once; want a retry only memoryRetry later")
	}
	used["hello-1"] = resourcemetrics.PodUsage{Containers: []resourcemetrics.ContainerUsage{{Name: "app", MemMilli: 20 << 20 * 1000, HasMemory: true}}}
	mu.Lock()
	now = now.Add(memoryRetry)
	mu.Unlock()
	if !h.p.ParkIncomplete(key) {
		t.Fatal("not ParkIncomplete memoryRetry after a park that kept memory requests")
	}
	if err := h.p.Park(ctx, key, parkReq); err != nil {
		t.Fatal(err)
	}
	want = `{"spec":{"containers":[{"name":"app","resources":{"requests":{"memory":"20Mi"}}}]}}`
	if rs := l.resizes(); len(rs) != 2 || rs[1].body != want {
		t.Fatalf("resize patches %+v; want the second\n %s", rs, want)
	}
	if evs := strings.Join(h.events(), "\n"); !strings.Contains(evs, "memory request lowered to what the container uses: app=20Mi") {
		t.Errorf("events %q; want the lowered memory request said", evs)
	}
	mu.Lock()
	now = now.Add(memoryRetry)
	mu.Unlock()
	if !h.p.ParkIncomplete(key) { // the queue-proxy's usage is still unknown
		t.Error("not ParkIncomplete with the queue-proxy's memory request still kept")
	}
	if err := h.p.Park(ctx, key, autoscaler.ParkRequest{}); err != nil {
		t.Fatal(err)
	}
	want = `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"500m","memory":"64Mi"}}},` +
		`{"name":"queue-proxy","resources":{"requests":{"cpu":"25m"}}}]}}`
	if rs := l.resizes(); len(rs) != 3 || rs[2].body != want {
		t.Fatalf("resize patches %+v; want the wake's\n %s", rs, want)
	}
	if h.p.ParkIncomplete(key) {
		t.Error("ParkIncomplete after the wake")
	}
}

// TestParkRefused: a container whose resizePolicy restarts it, or an API
// server without the resize subresource, refuses parking: Park returns
// ErrParkRefused, the Deployment gets one Warning Event however often it
// is asked, and the status says so.
func TestParkRefused(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "pods/resize"}, "hello-1")
	for _, tt := range []struct {
		name   string
		policy corev1.ResourceResizeRestartPolicy
		refuse error
		want   string
	}{
		{"restart policy", corev1.RestartContainer, nil, "RestartContainer"},
		{"no resize subresource", corev1.NotRequired, notFound, "not found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, l := parkFixture(t, tt.policy, tt.refuse)
			key := autoscaler.RevisionKey{Namespace: "default", Name: "hello"}
			for range 3 {
				err := h.p.Park(context.Background(), key, parkReq)
				if !errors.Is(err, autoscaler.ErrParkRefused) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Park: %v; want ErrParkRefused saying %q", err, tt.want)
				}
			}
			if tt.refuse == nil && len(l.resizes()) != 0 {
				t.Errorf("resize patches %+v sent for a container that would restart", l.resizes())
			}
			evs := h.events()
			n := 0
			for _, e := range evs {
				if strings.Contains(e, reasonParkRefused) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("events %q; want one %s", evs, reasonParkRefused)
			}
			st, ok := h.p.ParkStatus(key)
			if !ok || st.State != autoscaler.ParkStateRefused || !strings.Contains(st.Message, "goes to zero instead") {
				t.Errorf("ParkStatus %+v, %v; want refused", st, ok)
			}
		})
	}
}

// TestParkStatusResizePending: a resize the node defers shows in the
// status with the node's reason, and the pod keeps serving (it stays in
// the ready pods).
func TestParkStatusResizePending(t *testing.T) {
	h, _ := parkFixture(t, corev1.NotRequired, nil)
	ctx := context.Background()
	key := autoscaler.RevisionKey{Namespace: "default", Name: "hello"}
	if err := h.p.Park(ctx, key, parkReq); err != nil {
		t.Fatal(err)
	}
	if err := h.p.Park(ctx, key, autoscaler.ParkRequest{}); err != nil {
		t.Fatal(err)
	}
	pod, _ := h.client.CoreV1().Pods("default").Get(ctx, "hello-1", metav1.GetOptions{})
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue,
		Reason: corev1.PodReasonDeferred, Message: "Node didn't have enough capacity: cpu, requested: 500, capacity: 400"})
	if _, err := h.client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deferred resize in the status", func() bool {
		st, ok := h.p.ParkStatus(key)
		return ok && st.State == autoscaler.ParkStatePending && st.Reason == corev1.PodReasonDeferred
	})
	pods, err := h.p.ReadyPods(ctx, key)
	if err != nil || len(pods) != 1 {
		t.Errorf("ready pods %v, %v; want the pod serving", pods, err)
	}
}

// TestWakeAfterRestart: a platform that parked nothing wakes a pod the
// cache shows parked (an earlier autoscaler parked it), and calls nothing
// for a pod that is not.
func TestWakeAfterRestart(t *testing.T) {
	h, l := parkFixture(t, corev1.NotRequired, nil)
	ctx := context.Background()
	key := autoscaler.RevisionKey{Namespace: "default", Name: "hello"}
	if err := h.p.Park(ctx, key, autoscaler.ParkRequest{}); err != nil {
		t.Fatal(err)
	}
	if n := len(l.patches); n != 0 {
		t.Fatalf("%d patches waking a pod no one parked", n)
	}
	pod, _ := h.client.CoreV1().Pods("default").Get(ctx, "hello-1", metav1.GetOptions{})
	pod.Annotations = map[string]string{config.PodAnnotationParkedFrom: `{"app":{"cpu":"500m","memory":"64Mi"}}`}
	if _, err := h.client.CoreV1().Pods("default").Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the parked pod in the cache", func() bool {
		ps := h.p.inf.podsOf(clustertest.Deployment("hello", 1, nil))
		return len(ps) == 1 && ps[0].Annotations[config.PodAnnotationParkedFrom] != ""
	})
	if err := h.p.Park(ctx, key, autoscaler.ParkRequest{}); err != nil {
		t.Fatal(err)
	}
	want := `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"500m","memory":"64Mi"}}}]}}`
	if rs := l.resizes(); len(rs) != 1 || rs[0].body != want {
		t.Errorf("resizes %+v; want one restoring the recorded requests", rs)
	}
}
