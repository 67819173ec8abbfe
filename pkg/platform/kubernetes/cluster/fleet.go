package cluster

import (
	"strconv"

	coordinationv1 "k8s.io/api/coordination/v1"

	"ebb.dev/ebb/pkg/autoscaler/bucket"
	"ebb.dev/ebb/pkg/config"
)

// The autoscaler fleet's Leases in Ebb's namespace (pkg/platform/kubernetes/leader
// writes them, the activators read them): one per bucket, named
// bucket.Name(prefix, i, n) and held by the replica that decides for the
// bucket's revisions, and one per replica, PREFIX-replica-POD, held by the
// replica itself while it lives, whose annotations say where it answers.
const (
	// ComponentBucket and ComponentReplica are the values of
	// config.ComponentLabel on the bucket and the replica Leases (what the
	// activators' watch selects).
	ComponentBucket  = "autoscaler-bucket"
	ComponentReplica = "autoscaler-replica"
	// AnnotationAdmin is a replica's API address (host:port): status,
	// decisions, the dashboard, forwarded from any replica.
	AnnotationAdmin = "autoscaling.ebb.dev/admin-address"
	// AnnotationStats is a replica's stats address (host:port): where the
	// activators post the reports of the buckets it holds.
	AnnotationStats = "autoscaling.ebb.dev/stats-address"
	// AnnotationBuckets is a replica's bucket count: replicas that do not
	// agree on it do not share the revisions (one takes no bucket while
	// another lives).
	AnnotationBuckets = "autoscaling.ebb.dev/buckets"
)

// ReplicaLeaseName is the Lease of one replica.
func ReplicaLeaseName(prefix, identity string) string { return prefix + "-replica-" + identity }

// Replica is one live autoscaler replica as its Lease says.
type Replica struct {
	Identity     string
	Admin, Stats string // host:port; empty when it does not say
	Buckets      int    // its bucket count; 0 when it does not say
}

// ReadReplica reads a replica Lease of the prefix (ok false for any other
// Lease, or one without a holder).
func ReadReplica(prefix string, l *coordinationv1.Lease) (Replica, bool) {
	if l.Labels[config.ComponentLabel] != ComponentReplica || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" ||
		l.Name != ReplicaLeaseName(prefix, *l.Spec.HolderIdentity) {
		return Replica{}, false
	}
	n, _ := strconv.Atoi(l.Annotations[AnnotationBuckets])
	return Replica{Identity: *l.Spec.HolderIdentity, Admin: l.Annotations[AnnotationAdmin], Stats: l.Annotations[AnnotationStats], Buckets: n}, true
}

// ReadBucket reads a bucket Lease of the prefix: its index, its count and
// its holder ("" when released); ok false for any other Lease.
func ReadBucket(prefix string, l *coordinationv1.Lease) (i, n int, holder string, ok bool) {
	if i, n, ok = bucket.Parse(prefix, l.Name); !ok {
		return 0, 0, "", false
	}
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	return i, n, holder, true
}
