package leader

import (
	"context"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// slowAPI is the fleet's fake cluster answering every Lease update after
// delay, as a loaded API server (a slow etcd) does: a caller whose
// context ends first gets its error, and the update is not applied.
type slowAPI struct {
	*fake.Clientset
	delay atomic.Int64 // nanoseconds
}

func (s *slowAPI) CoordinationV1() coordinationclient.CoordinationV1Interface {
	return slowCoordination{CoordinationV1Interface: s.Clientset.CoordinationV1(), api: s}
}

type slowCoordination struct {
	coordinationclient.CoordinationV1Interface
	api *slowAPI
}

func (c slowCoordination) Leases(ns string) coordinationclient.LeaseInterface {
	return slowLeases{LeaseInterface: c.CoordinationV1Interface.Leases(ns), api: c.api}
}

type slowLeases struct {
	coordinationclient.LeaseInterface
	api *slowAPI
}

func (l slowLeases) Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if d := time.Duration(l.api.delay.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return l.LeaseInterface.Update(ctx, lease, opts)
}

// slowFleetOfThree starts replicas a, b and c on an API server whose
// Lease updates can be slowed, and waits until they share the buckets.
func slowFleetOfThree(t *testing.T) (*fleet, *slowAPI) {
	t.Helper()
	f := newFleet(t)
	slow := &slowAPI{Clientset: f.client}
	f.api = slow
	for _, id := range []string{"a", "b", "c"} {
		f.start(id, testCount)
	}
	f.balanced("a", "b", "c")
	return f, slow
}

// TestBucketsSlowAPIServerKeepsThem: an API server that answers each
// Lease update in 2 retry periods (within the renew deadline, 7.5
// retry periods) for three lease durations: nobody loses a bucket. Each
// renewal may run to its term's renew deadline (terms.go, renew); one cut
// at the retry period never lands, and the healthy fleet hands its
// buckets around.
func TestBucketsSlowAPIServerKeepsThem(t *testing.T) {
	f, slow := slowFleetOfThree(t)
	before := f.ledger.snapshot()
	f.ledger.mu.Lock()
	gains := f.ledger.gains
	f.ledger.mu.Unlock()
	slow.delay.Store(int64(400 * time.Millisecond)) // RetryPeriod 200ms, RenewDeadline 1.5s
	for end := time.Now().Add(3 * testLease); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if now := f.ledger.snapshot(); !maps.Equal(now, before) {
			t.Fatalf("the buckets' holders went from %v to %v while the API server answered slowly; want them kept", before, now)
		}
	}
	slow.delay.Store(0)
	f.ledger.mu.Lock()
	moved := f.ledger.gains - gains
	f.ledger.mu.Unlock()
	if moved != 0 {
		t.Errorf("%d buckets changed hands while the API server answered slowly; want none", moved)
	}
}

// TestBucketsSlowAPIServerTakesOver: while the API server answers each
// Lease update in 2 retry periods, a replica that dies has its buckets
// taken by the others within the lease duration and a few renew
// deadlines. A take (and its confirming read) cut at the retry period
// never lands, and the dead replica's revisions have no decider for as
// long as the API server is slow.
func TestBucketsSlowAPIServerTakesOver(t *testing.T) {
	f, slow := slowFleetOfThree(t)
	before := f.ledger.snapshot()
	slow.delay.Store(int64(400 * time.Millisecond)) // RetryPeriod 200ms, RenewDeadline 1.5s
	f.dead.Store("a", true)
	within(t, testLease+4*1500*time.Millisecond, "a's buckets taken by b and c while the API server is slow", func() bool {
		for i, o := range f.ledger.snapshot() {
			if before[i] == "a" && (o == "a" || o == "") {
				return false
			}
		}
		_, held := f.ledger.loads()
		return held == testCount
	})
	f.onlyMoved(before, "a")
}
