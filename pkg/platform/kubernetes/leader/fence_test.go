package leader

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"ebb.dev/ebb/pkg/autoscaler/bucket"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
)

// clocks are a replica's two clocks, stepped by the test: mono stops
// while the node is suspended, wall runs on.
type clocks struct {
	mu         sync.Mutex
	mono, wall time.Time
}

func newClocks() *clocks {
	at := time.Unix(1_000_000, 0)
	return &clocks{mono: at, wall: at}
}

func (c *clocks) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mono
}

func (c *clocks) wallNow() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wall
}

// suspend moves the wall clock on by d and the monotonic clock not at
// all: the node slept.
func (c *clocks) suspend(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall = c.wall.Add(d)
}

// oneReplica is replica a on the fleet's fake cluster, not running:
// the test drives its steps.
func oneReplica(t *testing.T, f *fleet, c *clocks, h Holder) *Buckets {
	t.Helper()
	b, err := NewBuckets(BucketOptions{Client: f.client, Namespace: config.SystemNamespace, Identity: "a", Count: testCount,
		Holder: h, Logger: zaptest.NewLogger(t), LeaseDuration: testLease, RenewDeadline: 1500 * time.Millisecond,
		RetryPeriod: 200 * time.Millisecond, HandoffTimeout: 300 * time.Millisecond, Now: c.now, Wall: c.wallNow})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBucketsFenceStoppedClock: a node suspended past the renew deadline
// resumes with its monotonic clock where it stopped; the wall clock ran
// on, and the fence closes on it (before, the monotonic clock alone kept
// it open until the next renewal).
func TestBucketsFenceStoppedClock(t *testing.T) {
	f := newFleet(t)
	c := newClocks()
	b := oneReplica(t, f, c, f.ledger.holder("a"))
	f.released(t, b, 4)
	b.acquire(context.Background(), 4)
	if !b.Owns(4) {
		t.Fatal("a fresh hold is not owned")
	}
	c.suspend(3 * testLease)
	if b.Owns(4) {
		t.Error("a write passes the fence after a suspension past the renew deadline")
	}
	if left, done := b.Hold(4); left > 0 || done != nil {
		t.Errorf("Hold after the suspension: %v left, want refused", left)
	}
	b.renew(context.Background(), 4, b.term(4))
	if b.term(4) != nil {
		t.Error("the renewal after the suspension kept the bucket")
	}
}

// TestBucketsWatchRevokes: the watch shows a held bucket's Lease
// deleted by hand, or naming another holder: the fence closes at once,
// before the next renewal, and an event older than this replica's own
// write is not taken for news.
func TestBucketsWatchRevokes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		deleted bool
		holder  string
		version func(mine int) int
		revoked bool
	}{
		{"deleted", true, "a", func(mine int) int { return mine + 1 }, true},
		{"another holder", false, "z", func(mine int) int { return mine + 1 }, true},
		{"an event older than the take", false, "", func(mine int) int { return mine - 1 }, false},
		{"its own renewal", false, "a", func(mine int) int { return mine + 1 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFleet(t)
			b := oneReplica(t, f, newClocks(), f.ledger.holder("a"))
			f.released(t, b, 4)
			b.acquire(context.Background(), 4)
			tm := b.term(4)
			if tm == nil {
				t.Fatal("not taken")
			}
			mine, err := strconv.Atoi(tm.writtenVersion())
			if err != nil {
				t.Fatal(err)
			}
			l := tm.lease.DeepCopy()
			l.ResourceVersion = strconv.Itoa(tc.version(mine))
			l.Spec.HolderIdentity = ptr.To(tc.holder)
			b.observe(l, tc.deleted)
			if got := !b.Owns(4); got != tc.revoked {
				t.Errorf("revoked %v, want %v", got, tc.revoked)
			}
			if !tc.revoked {
				return
			}
			b.renew(context.Background(), 4, tm)
			if b.term(4) != nil {
				t.Error("the term outlived the renewal after the revocation")
			}
		})
	}
}

// TestBucketsLeaseDeletedByHandLive: with the informer, a held Lease
// deleted by hand while its renewal is on its way (a slow one: a second
// and a half) closes the fence within a watch event's delivery, not when
// the renewal's answer comes back.
func TestBucketsLeaseDeletedByHandLive(t *testing.T) {
	f := newFleet(t)
	name := bucket.Name(config.AutoscalerName, 4, testCount)
	var slow atomic.Bool
	renewing := make(chan struct{}, 1)
	f.client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if l, ok := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease); ok && l.Name == name && slow.Load() {
			select {
			case renewing <- struct{}{}:
			default:
			}
			time.Sleep(1500 * time.Millisecond)
		}
		return false, nil, nil
	})
	b, err := NewBuckets(BucketOptions{Client: f.client, Namespace: config.SystemNamespace, Identity: "a", Count: testCount,
		Holder: f.ledger.holder("a"), Logger: zaptest.NewLogger(t), LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second,
		RetryPeriod: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	defer func() { slow.Store(false); cancel(); <-done }()
	within(t, 5*time.Second, "every bucket held", func() bool { _, n := f.ledger.loads(); return n == testCount })
	slow.Store(true)
	<-renewing // bucket 4's renewal is on its way
	gains := func() int { f.ledger.mu.Lock(); defer f.ledger.mu.Unlock(); return f.ledger.gains }
	before := gains()
	if err := f.client.CoordinationV1().Leases(config.SystemNamespace).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The replica takes the bucket afresh milliseconds after it lost it,
	// so a poll can miss the closed fence: a new gain says it closed too.
	within(t, 300*time.Millisecond, "the fence closed after the Lease was deleted", func() bool { return !b.Owns(4) || gains() > before })
}

// TestBucketsDeletedLeaseWaitedOut: a Lease another replica held, deleted
// by hand, counts as held until it would have lapsed: its holder may
// still be writing until it hears of it. Nobody creates it afresh before.
func TestBucketsDeletedLeaseWaitedOut(t *testing.T) {
	f := newFleet(t)
	c := newClocks()
	b := oneReplica(t, f, c, f.ledger.holder("a"))
	name := bucket.Name(config.AutoscalerName, 4, testCount)
	renewed := metav1.NewMicroTime(c.now())
	l := b.leaseObject(name, "bucket", coordinationv1.LeaseSpec{HolderIdentity: ptr.To("z"),
		LeaseDurationSeconds: ptr.To(int32(testLease / time.Second)), RenewTime: &renewed})
	l.ResourceVersion = "7"
	b.observe(l, false)
	b.observe(l, true) // deleted by hand
	b.acquire(context.Background(), 4)
	if b.term(4) != nil {
		t.Fatal("a Lease deleted while another replica held it was created afresh at once")
	}
	c.mu.Lock()
	c.mono, c.wall = c.mono.Add(testLease), c.wall.Add(testLease)
	c.mu.Unlock()
	b.acquire(context.Background(), 4)
	if b.term(4) == nil || b.Owns(4) {
		t.Fatal("the deleted Lease was not created once it would have lapsed, or its fence opened at once")
	}
	for range 2 {
		c.mu.Lock()
		c.mono, c.wall = c.mono.Add(testLease/2), c.wall.Add(testLease/2)
		c.mu.Unlock()
		b.renew(context.Background(), 4, b.term(4))
	}
	if !b.Owns(4) {
		t.Error("the fence of a Lease created afresh is shut a lease duration later")
	}
}

// TestBucketsCreatedLeaseWaits: a bucket whose Lease does not exist (never
// made, or deleted by hand before this replica saw it: a replica that
// just started, or whose watch is late) is taken, but its fence opens,
// and its Holder hears of it, only a lease duration after the take: a
// holder this replica never saw may still be writing until its own
// fence closes, up to the renew deadline after the deletion.
func TestBucketsCreatedLeaseWaits(t *testing.T) {
	f := newFleet(t)
	c := newClocks()
	b := oneReplica(t, f, c, f.ledger.holder("a"))
	b.acquire(context.Background(), 4)
	if b.term(4) == nil {
		t.Fatal("a bucket without a Lease was not taken")
	}
	if f.holderOf(t, 4) != "a" || b.Owns(4) {
		t.Fatal("the Lease made afresh is not held, or its fence opened at once")
	}
	for k, open := range []bool{false, true} { // renewed half a lease duration after the take, then a whole one
		c.mu.Lock()
		c.mono, c.wall = c.mono.Add(testLease/2), c.wall.Add(testLease/2)
		c.mu.Unlock()
		b.renew(context.Background(), 4, b.term(4))
		if b.Owns(4) != open {
			t.Fatalf("after %d half lease durations the fence is open: %v, want %v", k+1, !open, open)
		}
	}
	b.mu.Lock()
	evs := b.events[4]
	b.mu.Unlock()
	if !slices.Equal(evs, []termEvent{gained}) {
		t.Errorf("the Holder's calls for the bucket: %v, want one gain, once the fence opened", evs)
	}
}

// released makes bucket i's Lease as a fleet that ran before leaves it
// (let go: no holder), and shows it to b: a take of it is an update.
func (f *fleet) released(t *testing.T, b *Buckets, i int) {
	t.Helper()
	now := metav1.NewMicroTime(time.Now())
	l := b.leaseObject(bucket.Name(config.AutoscalerName, i, b.opts.Count), cluster.ComponentBucket, coordinationv1.LeaseSpec{HolderIdentity: ptr.To(""),
		LeaseDurationSeconds: ptr.To(int32(releasedSeconds)), RenewTime: &now})
	got, err := f.client.CoordinationV1().Leases(config.SystemNamespace).Create(context.Background(), l, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.observe(got, false)
}

// hangingHolder's Lose does not return until released.
type hangingHolder struct {
	release chan struct{}
	lost    atomic.Int32
}

func (h *hangingHolder) Gain(context.Context, int) {}
func (h *hangingHolder) Lose(context.Context, int) {
	h.lost.Add(1)
	<-h.release
}

// TestBucketsHandOffBounded: a bucket let go whose Holder's Lose hangs is
// released after the hand-off timeout anyway, with its fence closed; a
// write in flight holds the release back until it ends.
func TestBucketsHandOffBounded(t *testing.T) {
	f := newFleet(t)
	c := newClocks()
	h := &hangingHolder{release: make(chan struct{})}
	b := oneReplica(t, f, c, h)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go b.work(ctx, 4)
	f.released(t, b, 4)
	b.acquire(ctx, 4)
	left, writeDone := b.Hold(4) // a write on its way
	if left <= 0 {
		t.Fatal("the fresh hold admits no write")
	}
	began := time.Now()
	b.giveUp(4)
	within(t, 2*time.Second, "Lose called", func() bool { return h.lost.Load() == 1 })
	time.Sleep(500 * time.Millisecond) // past the hand-off timeout (300ms)
	if holder := f.holderOf(t, 4); holder != "a" {
		t.Fatalf("released (holder %q) while a write is in flight", holder)
	}
	if b.Owns(4) {
		t.Error("the fence is open past the hand-off timeout")
	}
	writeDone()
	within(t, time.Second, "released while Lose hangs", func() bool { return f.holderOf(t, 4) == "" })
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("the hand-off took %v", took)
	}
	close(h.release)
}

// holderOf is bucket i's Lease holder on the cluster.
func (f *fleet) holderOf(t *testing.T, i int) string {
	l, err := f.client.CoordinationV1().Leases(config.SystemNamespace).Get(context.Background(),
		bucket.Name(config.AutoscalerName, i, testCount), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

// TestBucketsRenewalDuringReleaseKeepsTheFenceShut: a renewal that
// lands while a release drains the writes in flight (it held the term's
// mutex first) must not open the fence again: writes admitted then
// would land after the release, on the next holder's term (found by
// faultfleet).
func TestBucketsRenewalDuringReleaseKeepsTheFenceShut(t *testing.T) {
	f := newFleet(t)
	b := oneReplica(t, f, newClocks(), f.ledger.holder("a"))
	f.released(t, b, 4)
	b.acquire(context.Background(), 4)
	tm := b.term(4)
	tm.close(false) // the release closed the fence and drains
	b.renew(context.Background(), 4, tm)
	if b.Owns(4) {
		t.Error("a renewal during the release opened the fence again")
	}
	if left, _ := b.Hold(4); left > 0 {
		t.Errorf("a write admitted during the release (%v left)", left)
	}
}
