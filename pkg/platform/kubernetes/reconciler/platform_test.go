package reconciler

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster/clustertest"
	"ebb.dev/ebb/pkg/stats"
)

// fakeListener records what it is given and rejects annotations with a
// "bad" value and a ConfigMap with key "bad".
type fakeListener struct {
	mu      sync.Mutex
	configs []map[string]string
	upserts []string
	deletes []string
	handed  []string
}

func (l *fakeListener) SetConfig(data map[string]string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.configs = append(l.configs, data)
	if v, ok := data["bad"]; ok {
		return fmt.Errorf(`config-autoscaler "bad" = %q: must not be there`, v)
	}
	return nil
}

func (l *fakeListener) Upsert(key autoscaler.RevisionKey, ann map[string]string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.upserts = append(l.upserts, key.String())
	for k, v := range ann {
		if v == "bad" {
			return fmt.Errorf("annotation %q = %q: must be a number", k, v)
		}
	}
	return nil
}

func (l *fakeListener) Delete(key autoscaler.RevisionKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deletes = append(l.deletes, key.String())
}

func (l *fakeListener) counts() (int, int, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.configs), len(l.upserts), len(l.deletes)
}

// The fixtures are shared with the activator source's tests.
var (
	deployment     = clustertest.Deployment
	readyPod       = clustertest.ReadyPod
	activatorSlice = clustertest.ActivatorSlice
)

// scaleReactors make the fake clientset serve deployments/scale from the
// Deployments it tracks; conflicts > 0 fails that many updates first.
func scaleReactors(c *fake.Clientset, conflicts int) {
	var mu sync.Mutex
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	c.PrependReactor("get", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "scale" {
			return false, nil, nil
		}
		obj, err := c.Tracker().Get(gvr, a.GetNamespace(), a.(k8stesting.GetAction).GetName())
		if err != nil {
			return true, nil, err
		}
		d := obj.(*appsv1.Deployment)
		return true, &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: d.Namespace, ResourceVersion: d.ResourceVersion},
			Spec: autoscalingv1.ScaleSpec{Replicas: *d.Spec.Replicas}}, nil
	})
	c.PrependReactor("update", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "scale" {
			return false, nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		if conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "deployments"}, "x", errors.New("the object has been modified"))
		}
		s := a.(k8stesting.UpdateAction).GetObject().(*autoscalingv1.Scale)
		obj, err := c.Tracker().Get(gvr, a.GetNamespace(), s.Name)
		if err != nil {
			return true, nil, err
		}
		d := obj.(*appsv1.Deployment).DeepCopy()
		if s.ResourceVersion != d.ResourceVersion { // the API server's precondition (Ebb always sends one)
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "deployments"}, s.Name,
				fmt.Errorf("resourceVersion %s, the object is at %s", s.ResourceVersion, d.ResourceVersion))
		}
		d.Spec.Replicas = &s.Spec.Replicas
		rv, _ := strconv.Atoi(d.ResourceVersion) // a fixture without one is at 0
		d.ResourceVersion = strconv.Itoa(rv + 1)
		return true, s, c.Tracker().Update(gvr, d, a.GetNamespace())
	})
}

type harness struct {
	p      *Platform
	client *fake.Clientset
	rec    *record.FakeRecorder
	l      *fakeListener
}

// start runs a platform on a fake clientset until the test ends.
func start(t *testing.T, o Options, objs ...runtime.Object) *harness {
	t.Helper()
	return startConflicting(t, o, 0, objs...)
}

// startConflicting is start with a scale subresource that answers the
// first updates with conflicts.
func startConflicting(t *testing.T, o Options, conflicts int, objs ...runtime.Object) *harness {
	t.Helper()
	return startWith(t, o, func(c *fake.Clientset) { scaleReactors(c, conflicts) }, objs...)
}

// startWith is start with reactors added to the clientset before the
// platform runs (adding them later races with the informers).
func startWith(t *testing.T, o Options, reactors func(*fake.Clientset), objs ...runtime.Object) *harness {
	t.Helper()
	h := &harness{client: fake.NewClientset(objs...), rec: record.NewFakeRecorder(100), l: &fakeListener{}}
	reactors(h.client)
	o.Client, o.Recorder, o.Listener = h.client, h.rec, h.l
	o.ScaleBackoff = Backoff{Duration: time.Millisecond, Factor: 2, Steps: 4, Cap: 10 * time.Millisecond}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	h.p = p
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return h
}

// eventually polls cond every 10ms for up to 5s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	clustertest.Eventually(t, what, cond)
}

// events drains the recorder.
func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (h *harness) slice(t *testing.T, name string) *discoveryv1.EndpointSlice {
	t.Helper()
	sl, err := h.client.DiscoveryV1().EndpointSlices("default").Get(context.Background(), PublicSliceName(name), metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return sl
}

var hello = autoscaler.RevisionKey{Namespace: "default", Name: "hello"}

func TestScaleRetriesConflictsAndRecordsTheReason(t *testing.T) {
	h := startConflicting(t, Options{}, 2, deployment("hello", 1, nil))
	ctx := context.Background()
	eventually(t, "the Deployment is cached", func() bool { _, err := h.p.deployment(hello); return err == nil })
	err := h.p.ScaleWithReason(ctx, hello, 5, autoscaler.ScaleReason{Code: "PanicTarget", Message: "panic average 35 over a per-pod target of 7 needs 5 pods"})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := h.client.AppsV1().Deployments("default").Get(ctx, "hello", metav1.GetOptions{})
	if *d.Spec.Replicas != 5 {
		t.Errorf("replicas %d, want 5 after two conflicts", *d.Spec.Replicas)
	}
	want := "Normal PanicTarget scaled from 1 to 5: panic average 35 over a per-pod target of 7 needs 5 pods"
	if evs := h.events(); !contains(evs, want) {
		t.Errorf("events %q: want %q", evs, want)
	}
	if err := h.p.ScaleWithReason(ctx, hello, 5, autoscaler.ScaleReason{Code: "PanicTarget"}); err != nil {
		t.Fatal(err)
	}
	if evs := h.events(); len(evs) != 0 {
		t.Errorf("events %q for a scale that changed nothing, want none", evs)
	}
}

// TestScaleOneCallWhenTheCacheIsCurrent: a decision is one write on the
// cached Deployment's resourceVersion; when the Deployment moved on since
// (a conflict), a read and a write follow at once, without the back-off.
func TestScaleOneCallWhenTheCacheIsCurrent(t *testing.T) {
	for _, tc := range []struct {
		conflicts int
		want      []string
	}{
		{0, []string{"update"}},
		{1, []string{"update", "get", "update"}},
	} {
		d := deployment("hello", 1, nil)
		d.ResourceVersion = "7"
		h := startConflicting(t, Options{}, tc.conflicts, d)
		h.p.o.ScaleBackoff.Duration = time.Hour // a back-off would hang the test
		ctx := context.Background()
		eventually(t, "the Deployment is cached", func() bool { _, err := h.p.deployment(hello); return err == nil })
		h.client.ClearActions()
		if err := h.p.ScaleWithReason(ctx, hello, 3, autoscaler.ScaleReason{Code: "StableTarget"}); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, a := range h.client.Actions() {
			if a.GetSubresource() == "scale" {
				got = append(got, a.GetVerb())
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%d conflicts: scale calls %v, want %v", tc.conflicts, got, tc.want)
		}
		if evs := h.events(); !contains(evs, "Normal StableTarget scaled from 1 to 3") {
			t.Errorf("%d conflicts: events %q", tc.conflicts, evs)
		}
		if c, _ := h.client.AppsV1().Deployments("default").Get(ctx, "hello", metav1.GetOptions{}); *c.Spec.Replicas != 3 {
			t.Errorf("%d conflicts: replicas %d, want 3", tc.conflicts, *c.Spec.Replicas)
		}
	}
}

func TestScaleOnlyOptedInDeployments(t *testing.T) {
	other := deployment("other", 3, nil)
	delete(other.Labels, config.LabelEnabled)
	h := start(t, Options{}, other)
	err := h.p.Scale(context.Background(), autoscaler.RevisionKey{Namespace: "default", Name: "other"}, 0)
	if !errors.Is(err, errNotOptedIn) {
		t.Errorf("scaling a Deployment without the label: %v, want ErrNotOptedIn", err)
	}
}

func TestScaleToZeroWaitsForTheActivator(t *testing.T) {
	h := start(t, Options{}, deployment("hello", 1, nil))
	ctx := context.Background()
	eventually(t, "the Service exists", func() bool {
		_, err := h.p.inf.services.Services("default").Get("hello")
		return err == nil
	})
	if err := h.p.Scale(ctx, hello, 0); !errors.Is(err, errActivatorNotInPath) {
		t.Fatalf("scale to zero with no activator anywhere: %v, want ErrActivatorNotInPath", err)
	}
	slices := h.client.DiscoveryV1().EndpointSlices(config.SystemNamespace)
	if _, err := slices.Create(ctx, activatorSlice("10.1.0.1", "10.1.0.2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the activators are cached", func() bool {
		sls, _ := h.p.inf.activators.List(labels.Everything())
		return len(sls) == 1
	})
	if err := h.p.SetActivatorInPath(ctx, hello, true); err != nil {
		t.Fatal(err)
	}
	sl := h.slice(t, "hello")
	if sl == nil || sl.Labels[RouteLabel] != RouteActivator || len(sl.Endpoints) != 2 {
		t.Fatalf("slice %+v: want the two activators", sl)
	}
	if err := h.p.Scale(ctx, hello, 0); err != nil {
		t.Errorf("scale to zero behind the activator: %v", err)
	}
}

func TestRouteToPodsOnlyOnceTheyAnswer(t *testing.T) {
	var answering sync.Map
	qp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := answering.Load("yes"); !ok || r.Header.Get(stats.ProbeHeaderName) != stats.ProbeHeaderValue {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(stats.ProbeHeaderValue))
	}))
	defer qp.Close()
	_, portStr, _ := net.SplitHostPort(qp.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	h := start(t, Options{QueueServingPort: int32(port), ProbeRetry: 20 * time.Millisecond},
		deployment("hello", 1, nil), activatorSlice("10.1.0.1"), readyPod("hello", "hello-1", "127.0.0.1"))
	ctx := context.Background()
	eventually(t, "the slice points at the activator", func() bool {
		sl := h.slice(t, "hello")
		return sl != nil && sl.Labels[RouteLabel] == RouteActivator
	})
	if err := h.p.SetActivatorInPath(ctx, hello, false); err != nil {
		t.Fatal(err)
	}
	if sl := h.slice(t, "hello"); sl.Labels[RouteLabel] != RouteActivator {
		t.Fatalf("route %s while the pod does not answer its probe, want the activator", sl.Labels[RouteLabel])
	}
	answering.Store("yes", true)
	eventually(t, "the slice points at the pod once it answers", func() bool {
		sl := h.slice(t, "hello")
		return sl.Labels[RouteLabel] == RoutePods && len(sl.Endpoints) == 1 && sl.Endpoints[0].Addresses[0] == "127.0.0.1" &&
			*sl.Ports[0].Port == int32(port)
	})
	// The event follows the slice's write by a moment: gather until it came.
	var evs []string
	eventually(t, "the route change is reported", func() bool {
		evs = append(evs, h.events()...)
		return containsPrefix(evs, "Normal RouteChanged Service hello now points at 1 ready pods")
	})
}

func TestAnnotationsRejectedOncePerChange(t *testing.T) {
	var removed atomic.Value // the last revision Options.Removed heard of
	h := start(t, Options{Removed: func(k autoscaler.RevisionKey) { removed.Store(k) }},
		deployment("hello", 1, map[string]string{"autoscaling.knative.dev/target": "bad"}))
	eventually(t, "the rejection is reported", func() bool {
		return containsPrefix(h.events(), `Warning AnnotationsRejected annotation "autoscaling.knative.dev/target" = "bad"`)
	})
	ctx := context.Background()
	d, _ := h.client.AppsV1().Deployments("default").Get(ctx, "hello", metav1.GetOptions{})
	d.Spec.Replicas = ptr(int32(2)) // not an annotation: nothing to report
	d.UID = "uid-hello"             // the fake clientset gives none
	if _, err := h.client.AppsV1().Deployments("default").Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, upserts, _ := h.l.counts(); upserts != 1 {
		t.Errorf("%d upserts for one set of annotations, want 1", upserts)
	}
	d.Spec.Template.Annotations["autoscaling.knative.dev/target"] = "10"
	if _, err := h.client.AppsV1().Deployments("default").Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the fix is applied", func() bool { return containsPrefix(h.events(), "Normal AnnotationsApplied") })
	key := autoscaler.RevisionKey{Namespace: "default", Name: "hello"}
	if uid, ok := h.p.DeploymentUID(key); !ok || uid != "uid-hello" {
		t.Errorf("DeploymentUID %q, %v; want the Deployment's uid-hello", uid, ok)
	}
	if removed.Load() != nil {
		t.Errorf("Removed heard of %v while the Deployment exists", removed.Load())
	}
	if err := h.client.AppsV1().Deployments("default").Delete(ctx, "hello", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the revision is deleted", func() bool { _, _, deletes := h.l.counts(); return deletes == 1 })
	eventually(t, "Removed hears of it", func() bool { return removed.Load() == key })
	if _, ok := h.p.DeploymentUID(key); ok {
		t.Errorf("DeploymentUID of a deleted Deployment")
	}
}

func TestConfigAppliedFirstAndRejectionsReported(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: config.ConfigMapName, Namespace: config.SystemNamespace},
		Data: map[string]string{"stable-window": "60s"}}
	h := start(t, Options{}, cm, deployment("hello", 1, nil))
	eventually(t, "the revision is added", func() bool { _, upserts, _ := h.l.counts(); return upserts == 1 })
	h.l.mu.Lock()
	first := len(h.l.configs)
	h.l.mu.Unlock()
	if first != 1 {
		t.Fatalf("%d configs before the first revision, want 1", first)
	}
	cm.Data = map[string]string{"bad": "1"}
	if _, err := h.client.CoreV1().ConfigMaps(config.SystemNamespace).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the rejection is reported", func() bool {
		return containsPrefix(h.events(), `Warning ConfigRejected config-autoscaler "bad" = "1"`)
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func containsPrefix(list []string, prefix string) bool {
	for _, x := range list {
		if strings.HasPrefix(x, prefix) {
			return true
		}
	}
	return false
}

// TestWarnRecordsAWarningEvent: the HPA class's metric warning is a Warning
// Event on the opted-in Deployment; a Deployment that is not opted in gets
// none.
func TestWarnRecordsAWarningEvent(t *testing.T) {
	other := deployment("other", 1, nil)
	delete(other.Labels, config.LabelEnabled)
	h := start(t, Options{}, deployment("hello", 1, nil), other)
	eventually(t, "the Deployment is cached", func() bool { _, err := h.p.deployment(hello); return err == nil })
	h.p.Warn(context.Background(), hello, "FailedGetResourceMetric", "failed to get cpu utilization: missing request for cpu in container app")
	want := "Warning FailedGetResourceMetric failed to get cpu utilization: missing request for cpu in container app"
	if evs := h.events(); !contains(evs, want) {
		t.Errorf("events %q: want %q", evs, want)
	}
	h.p.Warn(context.Background(), autoscaler.RevisionKey{Namespace: "default", Name: "other"}, "FailedGetResourceMetric", "x")
	if evs := h.events(); len(evs) != 0 {
		t.Errorf("events %q for a Deployment that is not opted in, want none", evs)
	}
}

// TestScaledToZero: a Deployment at zero whose spec changed since it was
// created (its generation) was scaled there; one created at zero is new.
func TestScaledToZero(t *testing.T) {
	scaled, fresh, running := deployment("scaled", 0, nil), deployment("fresh", 0, nil), deployment("running", 2, nil)
	scaled.Generation, fresh.Generation, running.Generation = 3, 1, 4
	h := start(t, Options{}, scaled, fresh, running)
	key := func(n string) autoscaler.RevisionKey { return autoscaler.RevisionKey{Namespace: "default", Name: n} }
	eventually(t, "the Deployments are cached", func() bool { _, err := h.p.deployment(key("running")); return err == nil })
	for name, want := range map[string]bool{"scaled": true, "fresh": false, "running": false, "absent": false} {
		if got := h.p.ScaledToZero(key(name)); got != want {
			t.Errorf("ScaledToZero(%s) = %v, want %v", name, got, want)
		}
	}
}
