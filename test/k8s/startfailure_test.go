//go:build k8s

package k8s

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"ebb.dev/ebb/pkg/platform/kubernetes/revisionstatus"
	"ebb.dev/ebb/pkg/podfailure"
)

// unschedulable is a node selector no testbed node has: the revision's
// pods stay Pending and unbound, so kwok leaves their status alone and the
// test writes it as a kubelet would for a container that cannot start.
var unschedulable = map[string]string{"ebb.dev/testbed-no-such-node": "true"}

// failedAnswer is what a request through an activator got.
type failedAnswer struct {
	code             int
	body, retryAfter string
	err              error
	took             time.Duration
}

// activatorGet sends one request for ns/name to an activator directly
// (the revision is at zero: its Service points there anyway).
func activatorGet(ctx context.Context, t *testing.T, ns, name string, timeout time.Duration) failedAnswer {
	acts, err := serviceAddrs(ctx, env.client, ebbNS, activatorName)
	if err != nil || len(acts) == 0 {
		return failedAnswer{err: fmt.Errorf("no activator address: %v", err)}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+acts[0]+"/", nil)
	req.Host = name + "." + ns + ".svc.cluster.local"
	began := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return failedAnswer{err: err, took: time.Since(began)}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return failedAnswer{code: resp.StatusCode, body: string(b), retryAfter: resp.Header.Get("Retry-After"), took: time.Since(began)}
}

// setContainerStatus writes the app container's status into every pod of
// the revision, as the kubelet would (Ready False).
func setContainerStatus(ctx context.Context, t *testing.T, ns, app string, st corev1.ContainerStatus) int {
	t.Helper()
	pods, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := env.client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Status.ContainerStatuses = []corev1.ContainerStatus{st}
			cur.Status.Conditions = append(cur.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse})
			_, err = env.client.CoreV1().Pods(ns).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// failingApp is the long form, at zero, whose app has image and whose
// pods cannot be scheduled.
func failingApp(t *testing.T, ns, name, image string) *appsv1.Deployment {
	d := appDeployment(t, ns, name, map[string]string{"autoscaling.knative.dev/initial-scale": "0"})
	d.Spec.Template.Spec.NodeSelector = unschedulable
	for i := range d.Spec.Template.Spec.Containers {
		if d.Spec.Template.Spec.Containers[i].Name == "app" {
			d.Spec.Template.Spec.Containers[i].Image = image
		}
	}
	return d
}

// TestStartFailureAnswered: a revision at zero whose image cannot be
// pulled. A request held in the activator while the pod is created is
// answered 503, naming the revision, the image and the cause, as soon as
// the kubelet reports ErrImagePull, long before the queue timeout (300 s);
// new requests get the same answer at once; the Deployment has a Warning
// Event and the RevisionAutoscaler says Ready False with the reason. The
// image fixed, a request wakes the revision and gets 200, and both say
// so. A container that exits at start (CrashLoopBackOff) is answered the
// same way.
func TestStartFailureAnswered(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "startfail")
	good := appDeployment(t, ns, "nopull", nil).Spec.Template.Spec.Containers
	createApp(t, failingApp(t, ns, "nopull", "ebb.dev/nosuch:1"))
	createApp(t, failingApp(t, ns, "crash", "ebb.dev/hello:dev"))
	for _, name := range []string{"nopull", "crash"} {
		waitFor(t, 30*time.Second, name+" at zero behind the activators", func() (bool, string) {
			_, ok, state := status(ctx, ns, name)
			return ok, state
		})
	}

	held := make(chan failedAnswer, 1)
	go func() { held <- activatorGet(ctx, t, ns, "nopull", 120*time.Second) }()
	waitFor(t, 30*time.Second, "the held request wakes nopull: a pod", func() (bool, string) {
		n, _ := replicas(ctx, ns, "nopull")
		pods, _ := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=nopull"})
		return n == 1 && len(pods.Items) == 1, fmt.Sprintf("%d replicas, %d pods", n, len(pods.Items))
	})
	pulled := time.Now()
	setContainerStatus(ctx, t, ns, "nopull", corev1.ContainerStatus{Name: "app", Image: "ebb.dev/nosuch:1",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull",
			Message: `failed to pull and unpack image "ebb.dev/nosuch:1": failed to resolve reference "ebb.dev/nosuch:1": dial tcp: lookup ebb.dev: no such host`}}})
	want := "activator: revision " + ns + "/nopull cannot start: image ebb.dev/nosuch:1 (container app) cannot be pulled: ErrImagePull: failed to pull"
	// The bound: the feature answers as soon as the activator sees the
	// status (milliseconds); 30 s is a busy machine's margin, a tenth of
	// the queue timeout the request would otherwise have waited.
	a := <-held
	if a.err != nil || a.code != http.StatusServiceUnavailable || !strings.HasPrefix(a.body, want) || time.Since(pulled) > 30*time.Second {
		t.Fatalf("the held request: %d %q (error %v) %v after the pull failed; want 503 %q... within 30 s (activator log:\n%s)",
			a.code, a.body, a.err, time.Since(pulled).Round(time.Millisecond), want, logTail(activatorLog(), 20))
	}
	t.Logf("held request answered %v after the pull failure was reported: %s", time.Since(pulled).Round(time.Millisecond), strings.TrimSpace(a.body))
	if a := activatorGet(ctx, t, ns, "nopull", 30*time.Second); a.code != http.StatusServiceUnavailable || !strings.HasPrefix(a.body, want) ||
		a.retryAfter != "10" {
		t.Errorf("a new request: %d %q (Retry-After %q, error %v) after %v; want 503 %q... at once", a.code, a.body, a.retryAfter, a.err, a.took, want)
	} else {
		t.Logf("a new request answered in %v", a.took.Round(time.Millisecond))
	}
	waitFor(t, 30*time.Second, "a Warning Event on the Deployment naming the image", func() (bool, string) {
		e, seen := findEvent(ctx, ns, "Deployment", "nopull", corev1.EventTypeWarning, podfailure.ReasonImagePullFailed,
			"pods cannot start: image ebb.dev/nosuch:1 (container app) cannot be pulled: ErrImagePull")
		return e != nil, seen
	})
	dyn, err := dynamic.NewForConfig(env.rest)
	if err != nil {
		t.Fatal(err)
	}
	readyCondition := func() (map[string]any, string) {
		o, err := dyn.Resource(revisionstatus.GVR).Namespace(ns).Get(ctx, "nopull", metav1.GetOptions{})
		if err != nil {
			return nil, err.Error()
		}
		cs, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
		for _, c := range cs {
			if m := c.(map[string]any); m["type"] == "Ready" {
				return m, fmt.Sprint(m)
			}
		}
		return nil, fmt.Sprint(o.Object["status"])
	}
	waitFor(t, 30*time.Second, "the RevisionAutoscaler's Ready condition False, ImagePullFailed", func() (bool, string) {
		c, seen := readyCondition()
		return c != nil && c["status"] == "False" && c["reason"] == podfailure.ReasonImagePullFailed &&
			strings.Contains(fmt.Sprint(c["message"]), "image ebb.dev/nosuch:1"), seen
	})

	// A container that exits at start.
	crashHeld := make(chan failedAnswer, 1)
	go func() { crashHeld <- activatorGet(ctx, t, ns, "crash", 120*time.Second) }()
	waitFor(t, 30*time.Second, "the held request wakes crash: a pod", func() (bool, string) {
		pods, _ := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=crash"})
		return len(pods.Items) == 1, fmt.Sprintf("%d pods", len(pods.Items))
	})
	setContainerStatus(ctx, t, ns, "crash", corev1.ContainerStatus{Name: "app", Image: "ebb.dev/hello:dev", RestartCount: 1,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 10s restarting failed container"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}}})
	wantCrash := "activator: revision " + ns + "/crash cannot start: container app (image ebb.dev/hello:dev) exits at start: exit code 2 (Error)"
	if a := <-crashHeld; a.code != http.StatusServiceUnavailable || !strings.HasPrefix(a.body, wantCrash) {
		t.Errorf("the held request for crash: %d %q (error %v); want 503 %q...", a.code, a.body, a.err, wantCrash)
	}

	// The fix: the image that exists, on a node that exists.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := env.client.AppsV1().Deployments(ns).Get(ctx, "nopull", metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Template.Spec.NodeSelector, d.Spec.Template.Spec.Containers = nil, good
		_, err = env.client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "a request to the fixed revision: 200", func() (bool, string) {
		a := activatorGet(ctx, t, ns, "nopull", 30*time.Second)
		return a.code == http.StatusOK, fmt.Sprintf("%d %q %v", a.code, a.body, a.err)
	})
	waitFor(t, 30*time.Second, "the RevisionAutoscaler's Ready condition True again", func() (bool, string) {
		c, seen := readyCondition()
		return c != nil && c["status"] == "True", seen
	})
}

// TestUnschedulableReported: a revision woken from zero whose pod the
// scheduler cannot place says so at once (a Warning Event with the
// scheduler's message, the revision's status, the RevisionAutoscaler's
// Ready False, reason Unschedulable), while the request keeps waiting, as
// a node may be added (it is not answered 503 as a failure is).
func TestUnschedulableReported(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "unsched")
	createApp(t, failingApp(t, ns, "nonode", "ebb.dev/hello:dev"))
	waitFor(t, 30*time.Second, "nonode at zero behind the activators", func() (bool, string) {
		_, ok, state := status(ctx, ns, "nonode")
		return ok, state
	})
	held := make(chan failedAnswer, 1)
	began := time.Now()
	go func() { held <- activatorGet(ctx, t, ns, "nonode", 30*time.Second) }()
	waitFor(t, 15*time.Second, "a Warning Event Unschedulable with the scheduler's message", func() (bool, string) {
		e, seen := findEvent(ctx, ns, "Deployment", "nonode", corev1.EventTypeWarning, podfailure.ReasonUnschedulable,
			"pods cannot start yet: pod nonode-", "cannot be scheduled: 0/", "node(s) didn't match")
		return e != nil, seen
	})
	waitFor(t, 15*time.Second, "the revision's status says Unschedulable", func() (bool, string) {
		s, ok, state := status(ctx, ns, "nonode")
		return ok && s.StartFailure != nil && s.StartFailure.Reason == podfailure.ReasonUnschedulable, state
	})
	dyn, err := dynamic.NewForConfig(env.rest)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "the RevisionAutoscaler's Ready condition False, Unschedulable", func() (bool, string) {
		o, err := dyn.Resource(revisionstatus.GVR).Namespace(ns).Get(ctx, "nonode", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		cs, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
		for _, c := range cs {
			if m := c.(map[string]any); m["type"] == "Ready" {
				return m["status"] == "False" && m["reason"] == podfailure.ReasonUnschedulable, fmt.Sprint(m)
			}
		}
		return false, fmt.Sprint(o.Object["status"])
	})
	t.Logf("Unschedulable reported within %v of the request", time.Since(began).Round(time.Millisecond))
	select {
	case a := <-held:
		t.Fatalf("the request was answered while a node may still come: %d %q (error %v) after %v", a.code, a.body, a.err, a.took)
	case <-time.After(3 * time.Second):
		t.Logf("the request still waits %v after it was sent", time.Since(began).Round(time.Millisecond))
	}
}
