package revisionstatus

import (
	"context"
	"hash/fnv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/podfailure"
)

func newFake() *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{GVR: Kind + "List"})
}

// summaries and statusIn serve a list of statuses as the autoscaler's
// EachSummary and StatusOf do.
func summaries(list func() []autoscaler.Status) func(func(autoscaler.Summary)) {
	return func(f func(autoscaler.Summary)) {
		for _, st := range list() {
			h := fnv.New64a()
			h.Write([]byte(st.State))
			for _, r := range st.Reasons {
				h.Write([]byte(r.Code))
			}
			f(autoscaler.Summary{Key: autoscaler.RevisionKey{Namespace: st.Namespace, Name: st.Name}, Desired: st.Desired,
				Recommended: st.Recommended, Ready: st.Ready, EBC: st.EBC, Panic: st.Panic, ActivatorInPath: st.ActivatorInPath,
				HasData: st.HasData, Resting: st.Resting, Stable: st.Stable, Reasons: h.Sum64()})
		}
	}
}

func statusIn(list func() []autoscaler.Status) func(autoscaler.RevisionKey) (autoscaler.Status, bool) {
	return func(k autoscaler.RevisionKey) (autoscaler.Status, bool) {
		for _, st := range list() {
			if st.Namespace == k.Namespace && st.Name == k.Name {
				return st, true
			}
		}
		return autoscaler.Status{}, false
	}
}

func status(desired, ready int32, state string, panic bool) autoscaler.Status {
	return autoscaler.Status{Namespace: "default", Name: "hello", Class: "kpa.autoscaling.knative.dev", Metric: "concurrency", Target: 10,
		DecisionView: autoscaler.DecisionView{Time: time.Now(), Desired: desired, Recommended: desired, Ready: ready, Panic: panic, State: state,
			HasData: true, Stable: float64(desired) * 9.5, ActivatorInPath: ready == 0,
			Reasons: []autoscaler.ReasonView{{Code: "StableTarget", Message: "stable average needs pods"}}}}
}

func get(t *testing.T, c *dynamicfake.FakeDynamicClient) *unstructured.Unstructured {
	t.Helper()
	o, err := c.Resource(GVR).Namespace("default").Get(context.Background(), "hello", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func condition(o *unstructured.Unstructured, typ string) map[string]any {
	cs, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range cs {
		if m := c.(map[string]any); m["type"] == typ {
			return m
		}
	}
	return nil
}

// TestWriterFollowsTheRevision: a revision going 0 -> 5 -> 0 is shown at
// each step with its columns' fields, conditions and reasons; an
// unchanged revision costs no write; a deleted object is written again.
func TestWriterFollowsTheRevision(t *testing.T) {
	c := newFake()
	cur := status(0, 0, "inactive", false)
	now := time.Unix(1_800_000_000, 0)
	w := New(Options{Client: c, Summaries: summaries(func() []autoscaler.Status { return []autoscaler.Status{cur} }),
		Status: statusIn(func() []autoscaler.Status { return []autoscaler.Status{cur} }), Now: func() time.Time { return now }})
	ctx := context.Background()

	if err := w.sync(ctx); err != nil {
		t.Fatal(err)
	}
	o := get(t, c)
	if d, _, _ := unstructured.NestedInt64(o.Object, "status", "desiredReplicas"); d != 0 {
		t.Errorf("desired %d, want 0", d)
	}
	if condition(o, "Active")["status"] != "False" || condition(o, "ScaleTargetInitialized")["status"] != "False" {
		t.Errorf("at zero: conditions %v", o.Object["status"])
	}
	writes := w.Writes()
	w.sync(ctx)
	if w.Writes() != writes {
		t.Errorf("an unchanged revision was written again (%d writes, then %d)", writes, w.Writes())
	}

	cur = status(5, 5, "active", true)
	now = now.Add(2 * time.Second)
	w.sync(ctx)
	o = get(t, c)
	ready, _, _ := unstructured.NestedInt64(o.Object, "status", "readyReplicas")
	value, _, _ := unstructured.NestedString(o.Object, "status", "metricValue")
	panic, _, _ := unstructured.NestedBool(o.Object, "status", "panic")
	if ready != 5 || value != "47.50" || !panic {
		t.Errorf("at 5: ready %d, value %q, panic %v; want 5, 47.50, true", ready, value, panic)
	}
	for typ, want := range map[string]string{"Active": "True", "Ready": "True", "ScaleTargetInitialized": "True", "AbleToScale": "True",
		"ScalingActive": "True", "ScalingLimited": "False"} {
		if got := condition(o, typ); got == nil || got["status"] != want {
			t.Errorf("at 5: condition %s = %v, want %s", typ, got, want)
		}
	}
	if reasons, _, _ := unstructured.NestedSlice(o.Object, "status", "lastReasons"); len(reasons) != 1 {
		t.Errorf("lastReasons %v, want the decision's one reason", reasons)
	}

	cur = status(0, 0, "inactive", false)
	now = now.Add(2 * time.Second)
	w.sync(ctx)
	o = get(t, c)
	if d, _, _ := unstructured.NestedInt64(o.Object, "status", "desiredReplicas"); d != 0 {
		t.Errorf("back at zero: desired %d", d)
	}
	since := time.Unix(1_800_000_002, 0).UTC().Format(time.RFC3339)
	if got := condition(o, "ScaleTargetInitialized"); got["status"] != "True" || got["lastTransitionTime"] != since {
		t.Errorf("ScaleTargetInitialized %v: want True since the first ready replica", got)
	}

	if err := c.Resource(GVR).Namespace("default").Delete(ctx, "hello", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cur = status(1, 0, "activating", false)
	w.sync(ctx)
	if d, _, _ := unstructured.NestedInt64(get(t, c).Object, "status", "desiredReplicas"); d != 1 {
		t.Errorf("after deletion: desired %d, want the object written again with 1", d)
	}
}

// TestWriterRateLimited: past the burst, a change waits for a token; the
// newest state is the one written then.
func TestWriterRateLimited(t *testing.T) {
	c := newFake()
	var list []autoscaler.Status
	for _, n := range []string{"a", "b", "c"} {
		st := status(1, 1, "active", false)
		st.Name = n
		list = append(list, st)
	}
	w := New(Options{Client: c, Summaries: summaries(func() []autoscaler.Status { return list }),
		Status: statusIn(func() []autoscaler.Status { return list }), Limit: 0.001, Burst: 1})
	w.sync(context.Background())
	l, err := c.Resource(GVR).Namespace("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 1 {
		t.Errorf("%d objects written with one token, want 1", len(l.Items))
	}
}

// TestWriterRefreshesTheValueLater: a revision whose counts, state and
// reasons stay has its moving metric value rewritten only every Refresh.
func TestWriterRefreshesTheValueLater(t *testing.T) {
	c := newFake()
	cur := status(3, 3, "active", false)
	now := time.Unix(1_800_000_000, 0)
	w := New(Options{Client: c, Summaries: summaries(func() []autoscaler.Status { return []autoscaler.Status{cur} }),
		Status: statusIn(func() []autoscaler.Status { return []autoscaler.Status{cur} }), Now: func() time.Time { return now }, Refresh: 10 * time.Second})
	ctx := context.Background()
	w.sync(ctx)
	writes := w.Writes()
	cur.Stable = 31.7
	now = now.Add(5 * time.Second)
	w.sync(ctx)
	if w.Writes() != writes {
		t.Errorf("a value-only change was written before the refresh period")
	}
	now = now.Add(6 * time.Second)
	w.sync(ctx)
	if v, _, _ := unstructured.NestedString(get(t, c).Object, "status", "metricValue"); w.Writes() == writes || v != "31.70" {
		t.Errorf("after the refresh period: value %q (%d writes, %d before), want 31.70 written", v, w.Writes(), writes)
	}
}

// TestWriterShowsAStartFailure: a revision whose pods cannot start is
// written at once with Ready False, the failure's reason and message,
// whatever its counts; once it starts, Ready follows the counts again.
func TestWriterShowsAStartFailure(t *testing.T) {
	c := newFake()
	cur := status(1, 0, "activating", false)
	var failure *podfailure.Failure
	w := New(Options{Client: c, Summaries: summaries(func() []autoscaler.Status { return []autoscaler.Status{cur} }),
		Status: statusIn(func() []autoscaler.Status { return []autoscaler.Status{cur} }),
		Failure: func(autoscaler.RevisionKey) (podfailure.Failure, bool) {
			if failure == nil {
				return podfailure.Failure{}, false
			}
			return *failure, true
		}})
	ctx := context.Background()
	w.sync(ctx)
	if got := condition(get(t, c), "Ready"); got["reason"] != "NotReady" {
		t.Fatalf("Ready %v, want NotReady while the pod starts", got)
	}
	failure = &podfailure.Failure{Reason: podfailure.ReasonImagePullFailed, Container: "app", Message: "image ebb.dev/nosuch:1 (container app) cannot be pulled"}
	w.sync(ctx)
	want := map[string]any{"type": "Ready", "status": "False", "reason": podfailure.ReasonImagePullFailed,
		"message": "pods cannot start: image ebb.dev/nosuch:1 (container app) cannot be pulled"}
	got := condition(get(t, c), "Ready")
	delete(got, "lastTransitionTime")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Ready (-want +got):\n%s", diff)
	}
	if f, _, _ := unstructured.NestedString(get(t, c).Object, "status", "failure"); f != podfailure.ReasonImagePullFailed {
		t.Errorf("status.failure %q, want %s (the wide view's column)", f, podfailure.ReasonImagePullFailed)
	}
	failure = &podfailure.Failure{Reason: podfailure.ReasonContainerOOMKilled, Container: "app",
		Message: "container app (image ebb.dev/hello:1) was killed for its memory"}
	w.sync(ctx)
	if got := condition(get(t, c), "Ready"); got["reason"] != podfailure.ReasonContainerOOMKilled ||
		got["message"] != "pods keep failing: container app (image ebb.dev/hello:1) was killed for its memory" {
		t.Errorf("OOM killed: Ready %v, want its own reason, and pods keep failing", got)
	}
	if f, _, _ := unstructured.NestedString(get(t, c).Object, "status", "failure"); f != podfailure.ReasonContainerOOMKilled {
		t.Errorf("status.failure %q, want %s", f, podfailure.ReasonContainerOOMKilled)
	}
	cur = status(0, 0, "inactive", false) // scaled to zero, still failing
	w.sync(ctx)
	if got := condition(get(t, c), "Ready"); got["reason"] != podfailure.ReasonContainerOOMKilled {
		t.Errorf("at zero and failing: Ready %v, want the failure", got)
	}
	cur, failure = status(1, 1, "active", false), nil
	w.sync(ctx)
	if got := condition(get(t, c), "Ready"); got["status"] != "True" {
		t.Errorf("started: Ready %v, want True", got)
	}
	if f, _, _ := unstructured.NestedString(get(t, c).Object, "status", "failure"); f != "" {
		t.Errorf("started: status.failure %q, want it cleared", f)
	}
}

// TestWriterOwnerAndRemoval: the object is owned by the revision's
// Deployment (created so, or given the owner when it existed already);
// a revision without its Deployment is not written; a removed revision's
// object is deleted, unless the revision is back; a deletion waits for a
// token.
func TestWriterOwnerAndRemoval(t *testing.T) {
	c := newFake()
	ctx := context.Background()
	key := autoscaler.RevisionKey{Namespace: "default", Name: "hello"}
	// An object of an earlier Deployment of the same name, or of an Ebb
	// without owner references.
	old := &unstructured.Unstructured{}
	old.SetAPIVersion(GVR.GroupVersion().String())
	old.SetKind(Kind)
	old.SetNamespace("default")
	old.SetName("hello")
	if _, err := c.Resource(GVR).Namespace("default").Create(ctx, old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	uid, exists := types.UID("uid-1"), true
	cur := status(1, 1, "active", false)
	w := New(Options{Client: c, Summaries: summaries(func() []autoscaler.Status { return []autoscaler.Status{cur} }),
		Status: statusIn(func() []autoscaler.Status { return []autoscaler.Status{cur} }),
		Owner:  func(k autoscaler.RevisionKey) (types.UID, bool) { return uid, exists && k == key }})
	w.sync(ctx)
	owners := get(t, c).GetOwnerReferences()
	if len(owners) != 1 || owners[0].Kind != "Deployment" || owners[0].APIVersion != "apps/v1" || owners[0].Name != "hello" ||
		owners[0].UID != "uid-1" || owners[0].BlockOwnerDeletion != nil || owners[0].Controller != nil {
		t.Errorf("owner references %+v, want the Deployment hello (uid-1) only", owners)
	}
	if d, _, _ := unstructured.NestedInt64(get(t, c).Object, "status", "desiredReplicas"); d != 1 {
		t.Errorf("desired %d, want 1", d)
	}

	// Removed, but back before the next Sync (opted in again): kept.
	w.Forget(key)
	w.sync(ctx)
	get(t, c)

	// Removed: the Deployment is gone; its object is deleted and not
	// written again while the autoscaler still has the revision.
	exists = false
	cur = status(2, 1, "active", false)
	w.Forget(key)
	w.sync(ctx)
	if _, err := c.Resource(GVR).Namespace("default").Get(ctx, "hello", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after the revision was removed: %v, want the object deleted", err)
	}
	w.sync(ctx)
	if _, err := c.Resource(GVR).Namespace("default").Get(ctx, "hello", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a revision without its Deployment was written again (%v)", err)
	}

	// Made anew (another UID): created with the new owner.
	exists, uid = true, "uid-2"
	w.sync(ctx)
	if owners := get(t, c).GetOwnerReferences(); len(owners) != 1 || owners[0].UID != "uid-2" {
		t.Errorf("owner references %+v, want the new Deployment's", owners)
	}

	// No token: the deletion waits for the next Sync with one.
	lim := New(Options{Client: c, Summaries: func(func(autoscaler.Summary)) {}, Status: statusIn(func() []autoscaler.Status { return nil }),
		Owner: func(autoscaler.RevisionKey) (types.UID, bool) { return "", false }, Limit: 0.001, Burst: 1})
	lim.limiter.Allow() // the one token spent
	lim.Forget(key)
	lim.sync(ctx)
	get(t, c)
	lim.limiter = rate.NewLimiter(rate.Inf, 1)
	lim.sync(ctx)
	if _, err := c.Resource(GVR).Namespace("default").Get(ctx, "hello", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the deletion was dropped for lack of a token: %v", err)
	}
}

// refuseAll is a fence.Keeper that holds no bucket.
type refuseAll struct{ asked atomic.Int32 }

func (k *refuseAll) Hold(int) (time.Duration, func()) {
	k.asked.Add(1)
	return 0, nil
}

// TestWriterFenced: a revision whose bucket this replica does not hold
// now (it was lost while its decider still runs here) has no status
// written by it.
func TestWriterFenced(t *testing.T) {
	c := newFake()
	cur := status(3, 3, "active", false)
	k := &refuseAll{}
	w := New(Options{Client: c, Summaries: summaries(func() []autoscaler.Status { return []autoscaler.Status{cur} }),
		Status: statusIn(func() []autoscaler.Status { return []autoscaler.Status{cur} })})
	w.SetFence(k, func(autoscaler.RevisionKey) int { return 0 })
	if err := w.sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w.Writes() != 0 || k.asked.Load() == 0 {
		t.Errorf("%d writes, the fence asked %d times: want none written, the fence asked", w.Writes(), k.asked.Load())
	}
	if _, err := c.Resource(GVR).Namespace("default").Get(context.Background(), "hello", metav1.GetOptions{}); err == nil {
		t.Error("the status of a revision whose bucket is not held was written")
	}
}
