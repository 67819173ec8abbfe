package reconciler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
