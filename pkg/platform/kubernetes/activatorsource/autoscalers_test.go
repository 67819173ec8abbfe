package activatorsource

import (
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"ebb.dev/ebb/pkg/autoscaler/bucket"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
)

func bucketLease(i, n int, holder string, renewed int64) *coordinationv1.Lease {
	t := metav1.NewMicroTime(metav1.Unix(renewed, 0).Time)
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: bucket.Name(config.AutoscalerName, i, n),
		Labels: map[string]string{config.ComponentLabel: cluster.ComponentBucket}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), RenewTime: &t}}
}

func replicaLease(id, stats string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: cluster.ReplicaLeaseName(config.AutoscalerName, id),
		Labels:      map[string]string{config.ComponentLabel: cluster.ComponentReplica},
		Annotations: map[string]string{cluster.AnnotationStats: stats, cluster.AnnotationBuckets: "10"}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(id)}}
}

// TestAutoscalersRoute: a revision's reports go to the stats address of
// its bucket's holder; a change of holder is signalled, a renewal is not;
// without a holder, or before any bucket Lease, there is no address.
func TestAutoscalersRoute(t *testing.T) {
	a := newAutoscalers(config.AutoscalerName)
	if b, addr := a.Route("default/hello"); b != "" || addr != "" {
		t.Errorf("before any Lease: %q %q", b, addr)
	}
	i := bucket.Of("default/hello", 10)
	a.update(replicaLease("as-1", "10.0.0.1:9093"), false)
	a.update(replicaLease("as-2", "10.0.0.2:9093"), false)
	a.update(bucketLease(i, 10, "as-1", 1), false)
	<-a.Changed()
	if b, addr := a.Route("default/hello"); b != bucket.Name(config.AutoscalerName, i, 10) || addr != "10.0.0.1:9093" {
		t.Errorf("held by as-1: %q %q", b, addr)
	}
	a.update(bucketLease(i, 10, "as-1", 2), false) // a renewal
	select {
	case <-a.Changed():
		t.Error("a renewal signalled a change")
	default:
	}
	a.update(bucketLease(i, 10, "", 3), false) // released
	<-a.Changed()
	if _, addr := a.Route("default/hello"); addr != "" {
		t.Errorf("released: %q, want no address", addr)
	}
	a.update(bucketLease(i, 10, "as-2", 4), false)
	<-a.Changed()
	if _, addr := a.Route("default/hello"); addr != "10.0.0.2:9093" {
		t.Errorf("taken by as-2: %q", addr)
	}
}

// TestAutoscalersRouteByLiveCount (issue 33, --buckets lowered 20 to 10
// with an old pod SIGKILLed): the dead replica's Leases of 20 still name
// it; once they lapse, reports go to the live holder in the count of 10
// (before, the count was voted by the Leases held, dead or not, and no
// report had a route).
func TestAutoscalersRouteByLiveCount(t *testing.T) {
	now := time.Unix(1000, 0)
	a := newAutoscalers(config.AutoscalerName)
	a.now = func() time.Time { return now }
	const rev = "default/hello"
	withDuration := func(l *coordinationv1.Lease) *coordinationv1.Lease {
		l.Spec.LeaseDurationSeconds = ptr.To(int32(2))
		return l
	}
	old := replicaLease("old", "10.0.0.1:9093")
	old.Annotations[cluster.AnnotationBuckets] = "20"
	a.update(withDuration(old), false)
	for i := range 20 {
		a.update(withDuration(bucketLease(i, 20, "old", 1)), false)
	}
	if _, addr := a.Route(rev); addr != "10.0.0.1:9093" {
		t.Fatalf("while old lives: %q", addr)
	}
	now = now.Add(3 * time.Second) // old was killed: none of its Leases changes again
	a.update(withDuration(replicaLease("new", "10.0.0.2:9093")), false)
	for i := range 10 {
		a.update(withDuration(bucketLease(i, 10, "new", 5)), false)
	}
	b, addr := a.Route(rev)
	if addr != "10.0.0.2:9093" || b != bucket.Name(config.AutoscalerName, bucket.Of(rev, 10), 10) {
		t.Errorf("after old died: %q %q, want new's bucket of 10", b, addr)
	}
}

// BenchmarkAutoscalersRoute is the activator's route of one stat, with
// 3 replicas holding 10 buckets (run at two commits to compare).
func BenchmarkAutoscalersRoute(b *testing.B) {
	a := newAutoscalers(config.AutoscalerName)
	for k, id := range []string{"as-1", "as-2", "as-3"} {
		a.update(replicaLease(id, fmt.Sprint("10.0.0.", k, ":9093")), false)
	}
	for i := range 10 {
		a.update(bucketLease(i, 10, fmt.Sprint("as-", 1+i%3), 1), false)
	}
	revs := make([]string, 1000)
	for k := range revs {
		revs[k] = fmt.Sprint("default/rev-", k)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for k := 0; k < b.N; k++ {
		if _, addr := a.Route(revs[k%len(revs)]); addr == "" {
			b.Fatal("no route")
		}
	}
}
