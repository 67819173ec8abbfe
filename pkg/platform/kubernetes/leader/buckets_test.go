package leader

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster/clustertest"
)

// ledger is every replica's Holder: who holds which bucket, as the
// replicas were told. Two holders of one bucket at once fail the test.
type ledger struct {
	t     *testing.T
	mu    sync.Mutex
	owner map[int]string
	moves int // Gains after the first ten
	gains int
}

func (l *ledger) holder(id string) Holder { return ledgerHolder{l, id} }

type ledgerHolder struct {
	l  *ledger
	id string
}

func (h ledgerHolder) Gain(_ context.Context, i int) {
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	if o, ok := h.l.owner[i]; ok {
		h.l.t.Errorf("bucket %d gained by %s while %s holds it", i, h.id, o)
	}
	h.l.owner[i] = h.id
	h.l.gains++
}

func (h ledgerHolder) Lose(_ context.Context, i int) {
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	if o := h.l.owner[i]; o != h.id {
		h.l.t.Errorf("bucket %d lost by %s, held by %q", i, h.id, o)
	}
	delete(h.l.owner, i)
}

// loads is how many buckets each replica holds, and how many are held.
func (l *ledger) loads() (map[string]int, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for _, o := range l.owner {
		out[o]++
	}
	return out, len(l.owner)
}

func (l *ledger) snapshot() map[int]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.owner)
}

// fleet is replicas sharing one fake cluster, with optimistic concurrency
// on Leases; a replica can be made to crash (its writes fail from then
// on, as a dead pod's would never come).
type fleet struct {
	t      *testing.T
	client *fake.Clientset
	api    k8s.Interface // what the replicas call: client, unless a test wraps it
	ledger *ledger
	dead   sync.Map // identity -> true
	stops  map[string]func()
}

const testCount = 10

// testLease is the tests' lease duration: short, and long enough that a
// busy machine renews within the renew deadline.
const testLease = 2 * time.Second

// within polls cond every 10ms for up to d.
func within(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
	}
}

func newFleet(t *testing.T) *fleet {
	f := &fleet{t: t, client: fake.NewClientset(), ledger: &ledger{t: t, owner: map[int]string{}}, stops: map[string]func(){}}
	f.api = f.client
	clustertest.Optimistic(f.client, "leases")
	for _, verb := range []string{"create", "update", "delete"} {
		f.client.PrependReactor(verb, "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if id, ok := f.writer(a); ok {
				if _, dead := f.dead.Load(id); dead {
					return true, nil, errors.New("connection refused: the pod is gone")
				}
			}
			return false, nil, nil
		})
	}
	t.Cleanup(func() {
		for _, stop := range f.stops {
			stop()
		}
	})
	return f
}

// writer is the replica a Lease write comes from.
func (f *fleet) writer(a k8stesting.Action) (string, bool) {
	var l *coordinationv1.Lease
	switch a := a.(type) {
	case k8stesting.CreateAction:
		l, _ = a.GetObject().(*coordinationv1.Lease)
	case k8stesting.UpdateAction:
		l, _ = a.GetObject().(*coordinationv1.Lease)
	}
	if l == nil || l.Spec.HolderIdentity == nil {
		return "", false
	}
	if *l.Spec.HolderIdentity == "" { // a release: the name of its last holder is not in it
		return "", false
	}
	return *l.Spec.HolderIdentity, true
}

func (f *fleet) start(id string, count int) {
	b, err := NewBuckets(BucketOptions{Client: f.api, Namespace: config.SystemNamespace, Identity: id, Count: count,
		Admin: id + ":9091", Stats: id + ":9093", Holder: f.ledger.holder(id), Logger: zaptest.NewLogger(f.t).Named(id),
		LeaseDuration: testLease, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 200 * time.Millisecond})
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	f.stops[id] = func() {
		cancel()
		if err := <-done; err != nil {
			f.t.Errorf("%s: Run: %v", id, err)
		}
	}
}

func (f *fleet) stop(id string) {
	f.stops[id]()
	delete(f.stops, id)
}

// balanced waits until every bucket is held, by the replicas named,
// within one bucket of each other.
func (f *fleet) balanced(ids ...string) map[string]int {
	f.t.Helper()
	var loads map[string]int
	within(f.t, 5*testLease, fmt.Sprint("the buckets held, evenly, by ", ids), func() bool {
		var held int
		loads, held = f.ledger.loads()
		if held != testCount || len(loads) != len(ids) {
			return false
		}
		vals := slices.Collect(maps.Values(loads))
		return slices.Max(vals)-slices.Min(vals) <= 1
	})
	return loads
}

// TestBucketsShareAndHandOver: three replicas hold 4, 3 and 3 of ten
// buckets; one that stops gives its own up at once (before its lease
// would expire), the others' stay where they are.
func TestBucketsShareAndHandOver(t *testing.T) {
	f, before := threeReplicas(t)
	began := time.Now()
	f.stop("a")
	f.balanced("b", "c")
	if took := time.Since(began); took >= testLease {
		t.Errorf("the hand-over took %v, no faster than the lease expiring (%v)", took, testLease)
	}
	f.onlyMoved(before, "a")
}

// threeReplicas starts replicas a, b and c, and returns who holds what
// once they share the buckets.
func threeReplicas(t *testing.T) (*fleet, map[int]string) {
	f := newFleet(t)
	for _, id := range []string{"a", "b", "c"} {
		f.start(id, testCount)
	}
	f.balanced("a", "b", "c")
	return f, f.ledger.snapshot()
}

// onlyMoved fails the test if a bucket held by another replica than gone
// before has another holder now.
func (f *fleet) onlyMoved(before map[int]string, gone string) {
	f.t.Helper()
	for i, o := range f.ledger.snapshot() {
		if before[i] != gone && before[i] != o {
			f.t.Errorf("bucket %d moved from %s to %s; only %s's buckets should move", i, before[i], o, gone)
		}
	}
}

// TestBucketsCrash: a replica that dies (no write of its arrives any
// more) loses its buckets to the others within the lease duration and a
// few retry periods; the others' buckets stay where they are.
func TestBucketsCrash(t *testing.T) {
	f, before := threeReplicas(t)
	died := time.Now()
	f.dead.Store("a", true)
	within(t, 5*testLease, "a's buckets taken by b and c", func() bool {
		for i, o := range f.ledger.snapshot() {
			if before[i] == "a" && (o == "a" || o == "") {
				return false
			}
		}
		_, held := f.ledger.loads()
		return held == testCount
	})
	if took := time.Since(died); took > 2*testLease {
		t.Errorf("the failover took %v, want about the lease duration (%v)", took, testLease)
	}
	f.onlyMoved(before, "a")
}

// TestBucketsJoin: a replica that joins takes its share from the others,
// one bucket at a time, and only buckets that go to it move.
func TestBucketsJoin(t *testing.T) {
	f := newFleet(t)
	f.start("a", testCount)
	f.start("b", testCount)
	f.balanced("a", "b")
	before := f.ledger.snapshot()
	f.start("c", testCount)
	loads := f.balanced("a", "b", "c")
	if loads["c"] < 3 {
		t.Errorf("loads %v: the new replica holds fewer than 3 of 10", loads)
	}
	moved := 0
	for i, o := range f.ledger.snapshot() {
		if o != before[i] {
			moved++
			if o != "c" {
				t.Errorf("bucket %d moved from %s to %s; only to the new replica", i, before[i], o)
			}
		}
	}
	if moved != loads["c"] {
		t.Errorf("%d buckets moved for the new replica's %d", moved, loads["c"])
	}
}

// TestBucketsCountMismatch: a replica with another bucket count takes no
// bucket while one of the first count lives (one each: the smaller count
// decides), and takes them all once it is gone.
func TestBucketsCountMismatch(t *testing.T) {
	f := newFleet(t)
	f.start("old", testCount)
	f.balanced("old")
	var newTook atomic.Bool
	l := f.client.CoordinationV1().Leases(config.SystemNamespace)
	f.start("new", 20)
	time.Sleep(time.Second) // several retry periods
	list, err := l.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, lease := range list.Items {
		if _, n, h, ok := cluster.ReadBucket(config.AutoscalerName, &lease); ok && n == 20 && h != "" {
			newTook.Store(true)
		}
	}
	if newTook.Load() {
		t.Error("the replica with 20 buckets took one while the one with 10 lives")
	}
	f.stop("old")
	within(t, 5*testLease, "the new replica holds its 20 buckets", func() bool {
		list, err := l.List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		held := 0
		for _, lease := range list.Items {
			if _, n, h, ok := cluster.ReadBucket(config.AutoscalerName, &lease); ok && n == 20 && h == "new" {
				held++
			}
		}
		return held == 20
	})
	if lease, err := l.Get(context.Background(), cluster.ReplicaLeaseName(config.AutoscalerName, "old"), metav1.GetOptions{}); err == nil {
		t.Errorf("the stopped replica's Lease is still there: %v", ptr.Deref(lease.Spec.HolderIdentity, ""))
	}
}
