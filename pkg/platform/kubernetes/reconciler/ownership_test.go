package reconciler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/autoscaler/bucket"
)

// Handoff makes fakeListener a platform.Handoffer.
func (l *fakeListener) Handoff(_ context.Context, keys ...autoscaler.RevisionKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		l.handed = append(l.handed, k.String())
	}
}

// twoBuckets returns names of two revisions in default that fall in
// different buckets of n, and those buckets.
func twoBuckets(n int) (a, b string, ba, bb int) {
	a, ba = "hello", bucket.Of("default/hello", n)
	for i := 0; ; i++ {
		b = fmt.Sprint("rev-", i)
		if bb = bucket.Of("default/"+b, n); bb != ba {
			return a, b, ba, bb
		}
	}
}

// TestBucketOwnership: with buckets, a replica feeds and routes only the
// revisions of the buckets it holds; gaining a bucket feeds its
// revisions at once; losing it hands them off.
func TestBucketOwnership(t *testing.T) {
	mine, theirs, bMine, bTheirs := twoBuckets(10)
	h := start(t, Options{Buckets: 10}, deployment(mine, 1, nil), deployment(theirs, 1, nil))
	<-h.p.Ready()
	ctx := context.Background()
	h.p.Gain(ctx, bMine)
	upserts := func() []string {
		h.l.mu.Lock()
		defer h.l.mu.Unlock()
		return slices.Clone(h.l.upserts)
	}
	if got := upserts(); !slices.Equal(got, []string{"default/" + mine}) {
		t.Fatalf("upserts after gaining bucket %d: %v; want %s's only, at once", bMine, got, mine)
	}
	eventually(t, "the held revision's Service", func() bool {
		_, err := h.client.CoreV1().Services("default").Get(ctx, publicServiceName(mine), metav1.GetOptions{})
		return err == nil
	})
	if _, err := h.client.CoreV1().Services("default").Get(ctx, publicServiceName(theirs), metav1.GetOptions{}); err == nil {
		t.Errorf("the Service of %s (bucket %d, not held) was written", theirs, bTheirs)
	}
	h.p.Lose(ctx, bMine)
	h.l.mu.Lock()
	handed := slices.Clone(h.l.handed)
	h.l.mu.Unlock()
	if !slices.Equal(handed, []string{"default/" + mine}) {
		t.Errorf("handed off %v; want %s", handed, mine)
	}
	h.p.Gain(ctx, bMine) // back: fed again
	if got := upserts(); len(got) != 2 {
		t.Errorf("upserts after regaining the bucket: %v; want the revision fed again", got)
	}
}

// TestScaleFenced (issue 33, a holder resumed after a pause): a scale
// for a revision whose bucket the fence refuses is not sent, even while
// the platform still feeds the revision (it has not heard of the loss).
func TestScaleFenced(t *testing.T) {
	mine, _, bMine, _ := twoBuckets(10)
	h := start(t, Options{Buckets: 10}, deployment(mine, 1, nil))
	var owns atomic.Bool
	h.p.SetFence(holdIf(func(b int) bool { return b == bMine && owns.Load() }))
	key := autoscaler.RevisionKey{Namespace: "default", Name: mine}
	eventually(t, "the Deployment is cached", func() bool { _, err := h.p.deployment(key); return err == nil })
	if err := h.p.Scale(context.Background(), key, 3); !errors.Is(err, errFenced) {
		t.Errorf("a fenced scale: %v, want ErrFenced", err)
	}
	d, _ := h.client.AppsV1().Deployments("default").Get(context.Background(), mine, metav1.GetOptions{})
	if *d.Spec.Replicas != 1 {
		t.Errorf("replicas %d after a fenced scale, want 1", *d.Spec.Replicas)
	}
	if evs := h.events(); len(evs) != 0 {
		t.Errorf("events %q for a fenced scale, want none (it is not this replica's to record)", evs)
	}
	owns.Store(true)
	if err := h.p.Scale(context.Background(), key, 3); err != nil {
		t.Errorf("a scale through the fence: %v", err)
	}
}

// holdIf is a fence.Keeper holding the buckets it says yes to, for a
// minute at a time.
type holdIf func(bucket int) bool

func (f holdIf) Hold(i int) (time.Duration, func()) {
	if f(i) {
		return time.Minute, func() {}
	}
	return 0, nil
}

// TestRemoveServicesFenced: taking back the Services of a revision that
// left Ebb is a write for it, refused while its bucket is not held.
func TestRemoveServicesFenced(t *testing.T) {
	mine := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "hello-private", Namespace: "default",
		Labels: map[string]string{managedByLabel: managedBy, revisionLabel: "hello"}}}
	h := start(t, Options{Buckets: 10}, mine) // no bucket held: nothing reconciles it
	<-h.p.Ready()
	key := types.NamespacedName{Namespace: "default", Name: "hello"}
	eventually(t, "the Service is cached", func() bool {
		svcs, _ := h.p.inf.services.Services("default").List(labels.Everything())
		return len(svcs) == 1
	})
	var owns atomic.Bool
	h.p.SetFence(holdIf(func(b int) bool { return b == bucket.Of("default/hello", 10) && owns.Load() }))
	if err := h.p.removeServices(context.Background(), key); !errors.Is(err, errFenced) {
		t.Errorf("removing the Services of a revision whose bucket is not held: %v, want ErrFenced", err)
	}
	if _, err := h.client.CoreV1().Services("default").Get(context.Background(), "hello-private", metav1.GetOptions{}); err != nil {
		t.Errorf("the Service was deleted through a closed fence: %v", err)
	}
	owns.Store(true)
	if err := h.p.removeServices(context.Background(), key); err != nil {
		t.Errorf("removing the Services through the fence: %v", err)
	}
	if _, err := h.client.CoreV1().Services("default").Get(context.Background(), "hello-private", metav1.GetOptions{}); err == nil {
		t.Error("the Service stayed after a removal through the fence")
	}
}

// TestEventsFenced: an Event about a revision is written only while its
// bucket is held, and a refused one is an API error the recorder drops
// (it would retry a transport error); an Event about anything else is
// not fenced.
func TestEventsFenced(t *testing.T) {
	client := fake.NewClientset()
	p := &Platform{o: Options{Buckets: 10}}
	held := bucket.Of("default/mine", 10)
	p.SetFence(holdIf(func(b int) bool { return b == held }))
	sink := fencedSink{ctx: context.Background(), events: client.CoreV1().Events(""), fenced: p.fenced}
	ev := func(kind, name string) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: kind + "-" + name + ".1", Namespace: "default"},
			InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: "default", Name: name}, Reason: "ScaleUp"}
	}
	other := "theirs"
	for bucket.Of("default/"+other, 10) == held {
		other += "x"
	}
	if _, err := sink.Create(ev("Deployment", "mine")); err != nil {
		t.Errorf("an Event about a held revision: %v", err)
	}
	_, err := sink.Create(ev("Deployment", other))
	if !apierrors.IsConflict(err) || !errors.Is(err, errFenced) && !strings.Contains(err.Error(), errFenced.Error()) {
		t.Errorf("an Event about a revision of a bucket not held: %v, want a conflict naming the fence", err)
	}
	if _, err := sink.Create(ev("ConfigMap", "config-autoscaler")); err != nil {
		t.Errorf("an Event about the ConfigMap: %v", err)
	}
	list, _ := client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	var got []string
	for _, e := range list.Items {
		got = append(got, e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name)
	}
	slices.Sort(got)
	if want := []string{"ConfigMap/config-autoscaler", "Deployment/mine"}; !slices.Equal(got, want) {
		t.Errorf("Events written %v, want %v", got, want)
	}
}
