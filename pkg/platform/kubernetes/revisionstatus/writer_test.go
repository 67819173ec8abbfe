package revisionstatus

import (
	"context"
	"hash/fnv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

	if err := w.Sync(ctx); err != nil {
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
	w.Sync(ctx)
	if w.Writes() != writes {
		t.Errorf("an unchanged revision was written again (%d writes, then %d)", writes, w.Writes())
	}

	cur = status(5, 5, "active", true)
	now = now.Add(2 * time.Second)
	w.Sync(ctx)
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
	w.Sync(ctx)
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
	w.Sync(ctx)
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
	w.Sync(context.Background())
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
	w.Sync(ctx)
	writes := w.Writes()
	cur.Stable = 31.7
	now = now.Add(5 * time.Second)
	w.Sync(ctx)
	if w.Writes() != writes {
		t.Errorf("a value-only change was written before the refresh period")
	}
	now = now.Add(6 * time.Second)
	w.Sync(ctx)
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
	w.Sync(ctx)
	if got := condition(get(t, c), "Ready"); got["reason"] != "NotReady" {
		t.Fatalf("Ready %v, want NotReady while the pod starts", got)
	}
	failure = &podfailure.Failure{Reason: podfailure.ReasonImagePullFailed, Container: "app", Message: "image ebb.dev/nosuch:1 (container app) cannot be pulled"}
	w.Sync(ctx)
	want := map[string]any{"type": "Ready", "status": "False", "reason": podfailure.ReasonImagePullFailed,
		"message": "pods cannot start: image ebb.dev/nosuch:1 (container app) cannot be pulled"}
	got := condition(get(t, c), "Ready")
	delete(got, "lastTransitionTime")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Ready (-want +got):\n%s", diff)
	}
	cur = status(0, 0, "inactive", false) // scaled to zero, still failing
	w.Sync(ctx)
	if got := condition(get(t, c), "Ready"); got["reason"] != podfailure.ReasonImagePullFailed {
		t.Errorf("at zero and failing: Ready %v, want the failure", got)
	}
	cur, failure = status(1, 1, "active", false), nil
	w.Sync(ctx)
	if got := condition(get(t, c), "Ready"); got["status"] != "True" {
		t.Errorf("started: Ready %v, want True", got)
	}
}
