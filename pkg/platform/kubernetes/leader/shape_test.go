package leader

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"ebb.dev/ebb/pkg/autoscaler/bucket"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
)

// leases counts the bucket Leases of count n held by id ("" any holder)
// and those of count n at all.
func (f *fleet) leases(n int, id string) (held, all int) {
	list, err := f.client.CoordinationV1().Leases(config.SystemNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, l := range list.Items {
		if _, c, h, ok := cluster.ReadBucket(config.AutoscalerName, &l); ok && c == n {
			all++
			if h != "" && (id == "" || h == id) {
				held++
			}
		}
	}
	return held, all
}

// TestBucketsStalledRollout (issue 33, a rollout that stalls): a
// replica of another count lives, one of the first count dies; the
// survivor of that count takes the dead one's buckets (before, nobody
// did while the other count lived).
func TestBucketsStalledRollout(t *testing.T) {
	f := newFleet(t)
	f.start("a", testCount)
	f.start("b", testCount)
	f.balanced("a", "b")
	f.start("new", 20)
	time.Sleep(2 * testLease)
	f.dead.Store("b", true)
	within(t, 5*testLease, "a holds all 10 buckets", func() bool {
		loads, held := f.ledger.loads()
		return held == testCount && loads["a"] == testCount
	})
	if held, _ := f.leases(20, ""); held != 0 {
		t.Errorf("%d buckets of 20 held while a holds the 10 that overlap them", held)
	}
}

// TestBucketsDeadCountRemoved (issue 33, --buckets lowered and an old
// pod SIGKILLed): the dead replica's Leases of the old count lapse, the
// new count takes every bucket, and the old count's Leases are removed.
func TestBucketsDeadCountRemoved(t *testing.T) {
	f := newFleet(t)
	f.start("old", 20)
	within(t, 5*testLease, "old holds its 20", func() bool { held, _ := f.leases(20, "old"); return held == 20 })
	f.dead.Store("old", true)
	f.start("new", testCount)
	within(t, 8*testLease, "new holds its 10 and the 20 are removed", func() bool {
		held, _ := f.leases(testCount, "new")
		_, old := f.leases(20, "")
		return held == testCount && old == 0
	})
}

// TestBucketsConfirmYields (issue 33, a stalled informer on the new
// replica): a replica that does not see a live Lease of another count
// takes an overlapping bucket, reads the Leases afresh, and lets it go
// at once without deciding for it.
func TestBucketsConfirmYields(t *testing.T) {
	f := newFleet(t)
	now := metav1.NewMicroTime(time.Now())
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: bucket.Name(config.AutoscalerName, 3, 10), Namespace: config.SystemNamespace,
		Labels: map[string]string{config.ComponentLabel: cluster.ComponentBucket}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("old"), LeaseDurationSeconds: ptr.To(int32(2)), RenewTime: &now}}
	if _, err := f.client.CoordinationV1().Leases(config.SystemNamespace).Create(context.Background(), l, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b, err := NewBuckets(BucketOptions{Client: f.client, Namespace: config.SystemNamespace, Identity: "new", Count: 20,
		Holder: f.ledger.holder("new"), Logger: zaptest.NewLogger(t), LeaseDuration: testLease, RenewDeadline: 1500 * time.Millisecond,
		RetryPeriod: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b.acquire(context.Background(), 13) // 13 of 20 overlaps 3 of 10; its informer has not run
	if b.term(13) != nil || b.Owns(13) {
		t.Error("the take of 13 of 20 was kept though 3 of 10 is live")
	}
	if held, _ := f.leases(20, ""); held != 0 {
		t.Errorf("%d Leases of 20 still held after the yield", held)
	}
	f.released(t, b, 12)
	b.acquire(context.Background(), 12) // overlaps 2 of 10: nobody holds it
	if b.term(12) == nil || !b.Owns(12) {
		t.Error("12 of 20, which no live Lease overlaps, was not kept")
	}
}

// TestBucketsFenceAfterPause (issue 33, a holder resumed after a pause):
// once its last renewal began a renew deadline ago on its clock, a
// holder's writes are fenced at once, before any API answer tells it of
// the loss, and its next renewal gives the bucket up rather than renew it.
func TestBucketsFenceAfterPause(t *testing.T) {
	f := newFleet(t)
	var skew time.Duration
	clock := func() time.Time { return time.Now().Add(skew) }
	b, err := NewBuckets(BucketOptions{Client: f.client, Namespace: config.SystemNamespace, Identity: "a", Count: testCount,
		Holder: f.ledger.holder("a"), Logger: zaptest.NewLogger(t), LeaseDuration: testLease, RenewDeadline: 1500 * time.Millisecond,
		RetryPeriod: 200 * time.Millisecond, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	f.released(t, b, 4)
	b.acquire(context.Background(), 4)
	if !b.Owns(4) {
		t.Fatal("a fresh hold is not owned")
	}
	skew = 3 * testLease // the process was stopped for three lease durations
	if b.Owns(4) {
		t.Error("a write passes the fence after a pause past the renew deadline")
	}
	b.renew(context.Background(), 4, b.term(4))
	if b.term(4) != nil {
		t.Error("the renewal after the pause kept the bucket")
	}
}
