package activatorsource

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"ebb.dev/ebb/pkg/activator"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster/clustertest"
	"ebb.dev/ebb/pkg/podfailure"
)

// fakeWatches serves the source's list-watches from a fake clientset
// (which filters lists by label, not watches).
func fakeWatches(c *fake.Clientset) Watches {
	return func(resource, ns string, opts func(*metav1.ListOptions)) cache.ListerWatcher {
		var lw *cache.ListWatch
		switch resource {
		case deployments:
			lw = listWatch(c.AppsV1().Deployments(ns), opts)
		case pods:
			lw = listWatch(c.CoreV1().Pods(ns), opts)
		case endpointSlices:
			lw = listWatch(c.DiscoveryV1().EndpointSlices(ns), opts)
		case leases:
			lw = listWatch(c.CoordinationV1().Leases(ns), opts)
		}
		return cache.ToListWatcherWithWatchListSemantics(lw, c)
	}
}

// typedClient is the part of a typed client of one resource listWatch uses.
type typedClient[L runtime.Object] interface {
	List(context.Context, metav1.ListOptions) (L, error)
	Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
}

func listWatch[L runtime.Object](c typedClient[L], opts func(*metav1.ListOptions)) *cache.ListWatch {
	if opts == nil {
		opts = func(*metav1.ListOptions) {}
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			opts(&o)
			return c.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			opts(&o)
			return c.Watch(ctx, o)
		},
	}
}

// watchViews runs a source and returns its views, until the test ends.
func watchViews(t *testing.T, o Options) <-chan []activator.Revision {
	t.Helper()
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	views := make(chan []activator.Revision, 64)
	done := make(chan error, 1)
	go func() { done <- s.Watch(ctx, func(rs []activator.Revision) { views <- rs }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch: %v", err)
		}
	})
	return views
}

// awaitView waits for a view equal to want.
func awaitView(t *testing.T, views <-chan []activator.Revision, want []activator.Revision) {
	t.Helper()
	if last, ok := awaitViewWhere(views, func(v []activator.Revision) bool { return cmp.Diff(want, v) == "" }); !ok {
		t.Fatalf("last view (-want +got):\n%s", cmp.Diff(want, last))
	}
}

// awaitViewWhere waits up to 5 s for a view that ok accepts; it returns the
// last view seen and whether one was accepted.
func awaitViewWhere(views <-chan []activator.Revision, ok func([]activator.Revision) bool) ([]activator.Revision, bool) {
	deadline := time.After(5 * time.Second)
	var last []activator.Revision
	for {
		select {
		case last = <-views:
			if ok(last) {
				return last, true
			}
		case <-deadline:
			return last, false
		}
	}
}

func TestSourceView(t *testing.T) {
	d := clustertest.Deployment("hello", 2, map[string]string{config.AnnotationContainerConcurrency: "10", config.AnnotationLoadBalancing: "round-robin"})
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app"},
		{Name: "queue-proxy", Env: []corev1.EnvVar{{Name: "REVISION_TIMEOUT_SECONDS", Value: "30"}}}}
	bad := clustertest.Deployment("bad", 1, map[string]string{config.AnnotationContainerConcurrency: "many", config.AnnotationLoadBalancing: "fastest"})
	plain := clustertest.Deployment("plain", 1, nil)
	delete(plain.Labels, config.LabelEnabled)
	starting := clustertest.ReadyPod("hello", "hello-2", "10.0.0.2")
	starting.Status.Conditions[0].Status = corev1.ConditionFalse
	client := fake.NewClientset(d, bad, plain, clustertest.ReadyPod("hello", "hello-1", "10.0.0.1"), starting,
		clustertest.ReadyPod("other", "other-1", "10.0.0.9"), clustertest.ActivatorSlice("10.1.0.3", "10.1.0.1", "10.1.0.2"))
	views := watchViews(t, Options{Watches: fakeWatches(client), PodIP: "10.1.0.2"})
	lb, _ := activator.ParseLoadBalancing("round-robin")
	awaitView(t, views, []activator.Revision{
		{Namespace: "default", Name: "bad", Labels: bad.Spec.Template.Labels, Timeout: 300 * time.Second, Activators: 3, ActivatorIndex: 2},
		{Namespace: "default", Name: "hello", Labels: d.Spec.Template.Labels,
			ContainerConcurrency: 10, Timeout: 30 * time.Second, LoadBalancing: lb, Activators: 3, ActivatorIndex: 2,
			Replicas: []activator.Replica{{Address: "10.0.0.1:8012", Ready: true}, {Address: "10.0.0.2:8012"}}}})
}

// TestSourceFollowsChanges: a pod turning ready, a Deployment leaving and
// an activator leaving each bring a new view.
func TestSourceFollowsChanges(t *testing.T) {
	ctx := context.Background()
	starting := clustertest.ReadyPod("hello", "hello-1", "10.0.0.1")
	starting.Status.Conditions[0].Status = corev1.ConditionFalse
	acts := clustertest.ActivatorSlice("10.1.0.1", "10.1.0.2")
	client := fake.NewClientset(clustertest.Deployment("hello", 1, nil), clustertest.Deployment("bye", 1, nil), starting, acts)
	views := watchViews(t, Options{Watches: fakeWatches(client), PodIP: "10.1.0.2", QueueServingPort: 8013})
	rev := func(name string, ready bool, activators, index int) activator.Revision {
		r := activator.Revision{Namespace: "default", Name: name, Labels: map[string]string{"app": name}, Timeout: 300 * time.Second,
			Activators: activators, ActivatorIndex: index}
		if name == "hello" {
			r.Replicas = []activator.Replica{{Address: "10.0.0.1:8013", Ready: ready}}
		}
		return r
	}
	awaitView(t, views, []activator.Revision{rev("bye", false, 2, 2), rev("hello", false, 2, 2)})

	ready := clustertest.ReadyPod("hello", "hello-1", "10.0.0.1")
	if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, ready, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	awaitView(t, views, []activator.Revision{rev("bye", false, 2, 2), rev("hello", true, 2, 2)})

	if err := client.AppsV1().Deployments("default").Delete(ctx, "bye", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	awaitView(t, views, []activator.Revision{rev("hello", true, 2, 2)})

	acts.Endpoints = acts.Endpoints[1:] // 10.1.0.1 leaves: this activator is the first of one
	if _, err := client.DiscoveryV1().EndpointSlices(config.SystemNamespace).Update(ctx, acts, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	awaitView(t, views, []activator.Revision{rev("hello", true, 1, 1)})
}

func TestActivatorIndex(t *testing.T) {
	acts := []cluster.Endpoint{{IP: "10.0.0.10"}, {IP: "10.0.0.2"}, {IP: "10.0.0.3"}} // sorted as strings, as Knative sorts
	for _, tc := range []struct {
		name string
		ip   string
		want int
	}{
		{"first", "10.0.0.10", 1},
		{"last", "10.0.0.3", 3},
		{"not ready yet: unknown", "10.0.0.4", 0},
		{"no POD_IP: unknown", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := activatorIndex(acts, tc.ip); got != tc.want {
				t.Errorf("activatorIndex(%q) = %d, want %d", tc.ip, got, tc.want)
			}
		})
	}
	if got := activatorIndex(nil, "10.0.0.1"); got != 0 {
		t.Errorf("no activators: index %d, want 0", got)
	}
}

// TestBadAnnotationWarnsOncePerValue: the same bad value is logged once,
// however many views are built; a new bad value is logged again.
func TestBadAnnotationWarnsOncePerValue(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	s, err := New(Options{Watches: fakeWatches(fake.NewClientset()), Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	d := clustertest.Deployment("hello", 1, map[string]string{config.AnnotationContainerConcurrency: "many"})
	s.revision(d, map[string]podfailure.Failure{})
	s.revision(d, map[string]podfailure.Failure{})
	d.Spec.Template.Annotations[config.AnnotationContainerConcurrency] = "-1"
	s.revision(d, map[string]podfailure.Failure{})
	var got []string
	for _, e := range logs.All() {
		got = append(got, e.ContextMap()["value"].(string))
	}
	if diff := cmp.Diff([]string{"many", "-1"}, got); diff != "" {
		t.Errorf("warned values (-want +got):\n%s", diff)
	}
}

// TestWatchFailsWhenCachesDoNotSync: a source that cannot list (RBAC)
// says so within SyncTimeout instead of serving nothing.
func TestWatchFailsWhenCachesDoNotSync(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC"))
	})
	s, err := New(Options{Watches: fakeWatches(client), SyncTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Watch(context.Background(), func([]activator.Revision) { t.Error("apply called without synced caches") })
	if err == nil || !strings.Contains(err.Error(), "did not sync within 200ms") {
		t.Errorf("Watch = %v, want the caches did not sync", err)
	}
}

// TestSourceReportsStartFailure: a revision whose only pod cannot pull
// its image carries the failure; once the pod is ready it does not.
func TestSourceReportsStartFailure(t *testing.T) {
	ctx := context.Background()
	pod := clustertest.ReadyPod("hello", "hello-1", "10.0.0.1")
	pod.Status.Conditions[0].Status = corev1.ConditionFalse
	pod.Spec.Containers = []corev1.Container{{Name: "app", Image: "ebb.dev/nosuch:1"}}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "ebb.dev/nosuch:1",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}}}
	client := fake.NewClientset(clustertest.Deployment("hello", 1, nil), pod)
	views := watchViews(t, Options{Watches: fakeWatches(client)})
	want := activator.Revision{Namespace: "default", Name: "hello", Labels: map[string]string{"app": "hello"}, Timeout: 300 * time.Second,
		Activators: 1, Replicas: []activator.Replica{{Address: "10.0.0.1:8012"}},
		Failure: &podfailure.Failure{Reason: podfailure.ReasonImagePullFailed, Cause: "ImagePullBackOff", Pod: "hello-1", Container: "app",
			Message: "image ebb.dev/nosuch:1 (container app) cannot be pulled: ImagePullBackOff: Back-off pulling image; check the image reference, " +
				"and that the nodes can pull it (the registry is reachable, imagePullSecrets), or load the image onto the nodes"}}
	awaitView(t, views, []activator.Revision{want})

	ready := clustertest.ReadyPod("hello", "hello-1", "10.0.0.1")
	if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, ready, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want.Failure, want.Replicas[0].Ready = nil, true
	awaitView(t, views, []activator.Revision{want})
}

// TestSourceWaitsForAnUnschedulablePod: a pod the scheduler cannot place
// (yet) is no failure for the activator: requests wait for it; past the
// Deployment's progress deadline it is one.
func TestSourceWaitsForAnUnschedulablePod(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hello-1", Namespace: "default", UID: "uid-hello-1", Labels: map[string]string{"app": "hello"}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 Insufficient cpu."}}}}
	d := clustertest.Deployment("hello", 1, nil)
	client := fake.NewClientset(d, pod)
	views := watchViews(t, Options{Watches: fakeWatches(client)})
	want := activator.Revision{Namespace: "default", Name: "hello", Labels: map[string]string{"app": "hello"}, Timeout: 300 * time.Second,
		Activators: 1}
	awaitView(t, views, []activator.Revision{want})

	d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
		Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "hello-1" has timed out progressing.`}}
	if _, err := client.AppsV1().Deployments("default").UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want.Failure = &podfailure.Failure{Reason: podfailure.ReasonUnschedulable, Cause: "Unschedulable", Pod: "hello-1",
		Message: "pod hello-1 stayed unschedulable past the Deployment's progress deadline: pod hello-1 cannot be scheduled: " +
			"0/1 nodes are available: 1 Insufficient cpu.; lower the pod's resource requests, fix its nodeSelector, affinity or tolerations, " +
			"or add nodes (a cluster autoscaler may be adding one: requests wait for it)"}
	awaitView(t, views, []activator.Revision{want})
}

// TestSourceKeepsACrashAfterServing: the activator answers a crash loop's
// requests with the cause; after a crash after serving, a run that died
// before the kubelet saw its pod ready (the activator probes a restarted
// replica and sends it requests first) is still named a crash after
// serving, not "exits at start".
func TestSourceKeepsACrashAfterServing(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	pod := clustertest.ReadyPod("hello", "hello-1", "10.0.0.1")
	pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = "5d8f"
	pod.Status.Conditions[0].Status, pod.Status.Conditions[0].LastTransitionTime = corev1.ConditionFalse, metav1.NewTime(t0.Add(30*time.Second))
	pod.Spec.Containers = []corev1.Container{{Name: "app", Image: "ebb.dev/hello:1"}}
	run := func(restarts int32, started, finished time.Duration) []corev1.ContainerStatus {
		return []corev1.ContainerStatus{{Name: "app", Image: "ebb.dev/hello:1", RestartCount: restarts,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
				StartedAt: metav1.NewTime(t0.Add(started)), FinishedAt: metav1.NewTime(t0.Add(finished))}}}}
	}
	pod.Status.ContainerStatuses = run(1, 0, 30*time.Second)
	client := fake.NewClientset(clustertest.Deployment("hello", 1, nil), pod)
	views := watchViews(t, Options{Watches: fakeWatches(client)})
	awaitFailure(t, views, podfailure.ReasonContainerCrashedAfterStart, "crashed after it started serving")

	fast := pod.DeepCopy() // served and died within its first second, never seen ready
	fast.Status.ContainerStatuses = run(4, 50*time.Second, 50*time.Second)
	if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, fast, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	awaitFailure(t, views, podfailure.ReasonContainerCrashedAfterStart, "keeps crashing after serving")
}

// TestSourceKeepsACrashAfterServingThroughAReadyMoment: a replica the
// kubelet saw ready for a moment between two crashes is no recovery; the
// next run, dead before the kubelet saw it ready (its pod's readiness
// last changed before the run started), is still a crash after serving.
// Without the memory kept through the ready moment the activator's 503
// said "exits at start" (issue 40: the Event said
// ContainerCrashedAfterStart). A replica ready for the settle time is a
// recovery: the next crash at start is named as such.
func TestSourceKeepsACrashAfterServingThroughAReadyMoment(t *testing.T) {
	lp := newLoopingPod(t, 41*time.Second)
	pod := lp.crashed(30*time.Second, 1, 0, 30*time.Second)
	client := fake.NewClientset(clustertest.Deployment("hello", 1, nil), pod)
	views := watchViews(t, Options{Watches: fakeWatches(client), Now: lp.now})
	awaitFailure(t, views, podfailure.ReasonContainerCrashedAfterStart, "crashed after it started serving")

	// Run 2 (started at 40 s) is seen ready at 41 s: requests go to it.
	lp.update(client, lp.ready(41*time.Second, 2, 40*time.Second))
	awaitServing(t, views)

	// Run 2 dies at 42 s; run 3 starts at 50 s, serves the activator's
	// requests and dies within its first second, never seen ready.
	lp.setNow(51 * time.Second)
	lp.update(client, lp.crashed(42*time.Second, 3, 50*time.Second, 50*time.Second))
	awaitFailure(t, views, podfailure.ReasonContainerCrashedAfterStart, "keeps crashing after serving")

	// Run 4 is ready for the settle time: recovered. Run 5 then exits at
	// start (its pod's readiness changed before it started): so named.
	lp.setNow(60*time.Second + podfailure.RecoverSettle)
	lp.update(client, lp.ready(60*time.Second, 4, 40*time.Second))
	awaitServing(t, views)
	lp.update(client, lp.crashed(120*time.Second, 5, 130*time.Second, 130*time.Second))
	awaitFailure(t, views, podfailure.ReasonContainerCrashing, "exits at start")
}

// TestSourceForgetsACrashAfterTheSettle: a replica that stays ready for
// the settle time, with no news from the cluster, is a recovery all the
// same (the source looks again when it may be): its next crash at start
// is named as such.
func TestSourceForgetsACrashAfterTheSettle(t *testing.T) {
	lp := newLoopingPod(t, 31*time.Second)
	pod := lp.crashed(30*time.Second, 1, 0, 30*time.Second)
	client := fake.NewClientset(clustertest.Deployment("hello", 1, nil), pod)
	views := watchViews(t, Options{Watches: fakeWatches(client), Now: lp.now, RecoverSettle: 300 * time.Millisecond})
	awaitFailure(t, views, podfailure.ReasonContainerCrashedAfterStart, "crashed after it started serving")

	// Ready at 40 s, seen at 40 s: the settle (300ms) has not passed. The
	// clock then moves on by itself, with no news from the cluster.
	lp.setNow(40 * time.Second)
	lp.update(client, lp.ready(40*time.Second, 2, 40*time.Second))
	awaitServing(t, views)
	lp.setNow(50 * time.Second)
	awaitServing(t, views) // the view built again at the settle's end

	// Run 3 then exits at start: a crash at start, the crash after serving
	// forgotten.
	lp.update(client, lp.crashed(60*time.Second, 3, 70*time.Second, 70*time.Second))
	awaitFailure(t, views, podfailure.ReasonContainerCrashing, "exits at start")
}

// loopingPod builds the states of one replica in a crash loop, its times
// offsets from t0, with a clock the test sets (held in a channel, so the
// source's goroutines read it safely).
type loopingPod struct {
	t   *testing.T
	t0  time.Time
	clk chan time.Time
}

func newLoopingPod(t *testing.T, now time.Duration) *loopingPod {
	lp := &loopingPod{t: t, t0: time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC), clk: make(chan time.Time, 1)}
	lp.clk <- lp.t0.Add(now)
	return lp
}

func (lp *loopingPod) now() time.Time { n := <-lp.clk; lp.clk <- n; return n }

func (lp *loopingPod) setNow(d time.Duration) { <-lp.clk; lp.clk <- lp.t0.Add(d) }

func (lp *loopingPod) at(d time.Duration) metav1.Time { return metav1.NewTime(lp.t0.Add(d)) }

func (lp *loopingPod) base() *corev1.Pod {
	pod := clustertest.ReadyPod("hello", "hello-1", "10.0.0.1")
	pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = "5d8f"
	pod.Spec.Containers = []corev1.Container{{Name: "app", Image: "ebb.dev/hello:1"}}
	return pod
}

// crashed: not ready since notReady, in CrashLoopBackOff after restarts,
// its last run from started to finished.
func (lp *loopingPod) crashed(notReady time.Duration, restarts int32, started, finished time.Duration) *corev1.Pod {
	p := lp.base()
	p.Status.Conditions[0].Status, p.Status.Conditions[0].LastTransitionTime = corev1.ConditionFalse, lp.at(notReady)
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "ebb.dev/hello:1", RestartCount: restarts,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
			StartedAt: lp.at(started), FinishedAt: lp.at(finished)}}}}
	return p
}

// ready: ready since readyAt after restarts, running since started (the
// run before it the first: from 0 to 30 s).
func (lp *loopingPod) ready(readyAt time.Duration, restarts int32, started time.Duration) *corev1.Pod {
	p := lp.crashed(0, restarts, 0, 30*time.Second)
	p.Status.Conditions[0].Status, p.Status.Conditions[0].LastTransitionTime = corev1.ConditionTrue, lp.at(readyAt)
	p.Status.ContainerStatuses[0].Ready = true
	p.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: lp.at(started)}}
	return p
}

func (lp *loopingPod) update(client *fake.Clientset, p *corev1.Pod) {
	lp.t.Helper()
	if _, err := client.CoreV1().Pods("default").UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		lp.t.Fatal(err)
	}
}

// awaitServing waits for a view whose only revision has a ready replica
// and no failure.
func awaitServing(t *testing.T, views <-chan []activator.Revision) {
	t.Helper()
	last, ok := awaitViewWhere(views, func(v []activator.Revision) bool {
		return len(v) == 1 && v[0].Failure == nil && len(v[0].Replicas) == 1 && v[0].Replicas[0].Ready
	})
	if !ok {
		t.Fatalf("last view %+v, want one ready replica and no failure", last)
	}
}

// awaitFailure waits for a view whose only revision fails with reason, its
// message holding part.
func awaitFailure(t *testing.T, views <-chan []activator.Revision, reason, part string) {
	t.Helper()
	last, ok := awaitViewWhere(views, func(v []activator.Revision) bool {
		return len(v) == 1 && v[0].Failure != nil && v[0].Failure.Reason == reason && strings.Contains(v[0].Failure.Message, part)
	})
	if !ok {
		var f *podfailure.Failure
		if len(last) == 1 {
			f = last[0].Failure
		}
		t.Fatalf("last failure %+v, want %s with %q", f, reason, part)
	}
}
