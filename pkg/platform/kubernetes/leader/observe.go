package leader

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"ebb.dev/ebb/pkg/autoscaler/bucket"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
)

// fleetSelector selects the bucket and replica Leases (not the elected
// leader's, nor anyone else's).
var fleetSelector = config.ComponentLabel + " in (" + cluster.ComponentBucket + "," + cluster.ComponentReplica + ")"

// syncTimeout bounds the wait for the first List of the Leases.
const syncTimeout = time.Minute

// watch starts the Leases' informer until ctx ends and waits for its
// first List.
func (b *Buckets) watch(ctx context.Context) error {
	f := informers.NewSharedInformerFactoryWithOptions(b.opts.Client, 0, informers.WithNamespace(b.opts.Namespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = fleetSelector }))
	inf := f.Coordination().V1().Leases().Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{ // lives as long as the informer
		AddFunc:    func(obj any) { b.observe(obj, false) },
		UpdateFunc: func(_, obj any) { b.observe(obj, false) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			b.observe(obj, true)
		},
	})
	f.Start(ctx.Done())
	wctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(wctx.Done(), inf.HasSynced) {
		return fmt.Errorf("buckets: the Leases of namespace %s could not be listed within %v: can the ServiceAccount list and watch "+
			"leases there? See docs/kubernetes.md, RBAC", b.opts.Namespace, syncTimeout)
	}
	return nil
}

// observe records a Lease as seen now, and wakes the loop.
func (b *Buckets) observe(obj any, deleted bool) {
	l, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return
	}
	b.revoke(l, deleted)
	now := b.opts.Now()
	b.mu.Lock()
	switch prev := b.obs[l.Name]; {
	case deleted && prev != nil && b.heldByOther(prev, now):
		b.obs[l.Name] = &observed{lease: prev.lease, changed: prev.changed, first: prev.first, deleted: true}
	case deleted:
		delete(b.obs, l.Name)
	case prev == nil:
		b.obs[l.Name] = &observed{lease: l, changed: now, first: now}
	case !sameRecord(prev.lease, l):
		b.obs[l.Name] = &observed{lease: l, changed: now, first: prev.first}
	default:
		// The same record: the clock keeps running from its change. A new
		// value, never a write to prev: a reader may hold prev unlocked.
		b.obs[l.Name] = &observed{lease: l, changed: prev.changed, first: prev.first}
	}
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// heldByOther: seen is a live bucket Lease another replica holds. b.mu
// is held.
func (b *Buckets) heldByOther(seen *observed, now time.Time) bool {
	_, _, holder, ok := cluster.ReadBucket(b.opts.Prefix, seen.lease)
	return ok && holder != b.opts.Identity && b.live(seen, now)
}

// sameRecord: the same holder, renewed at the same time.
func sameRecord(a, b *coordinationv1.Lease) bool {
	h := func(l *coordinationv1.Lease) string {
		if l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	t := func(l *coordinationv1.Lease) time.Time {
		if l.Spec.RenewTime == nil {
			return time.Time{}
		}
		return l.Spec.RenewTime.Time
	}
	return h(a) == h(b) && t(a).Equal(t(b))
}

// table is the fleet as this replica sees it: who holds each bucket and
// where every live replica answers. It is a snapshot: do not modify it.
type table struct {
	Count int
	Self  string
	// Holders is each bucket's live holder; a zero Replica when free.
	Holders []cluster.Replica
	// Members are the live replicas with this one's bucket count (this
	// one included), sorted by identity.
	Members []cluster.Replica
}

// table returns the latest view.
func (b *Buckets) Table() *table { return b.table.Load() }

// publish makes the current view the Table.
func (b *Buckets) publish(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := &table{Count: b.opts.Count, Self: b.opts.Identity, Holders: make([]cluster.Replica, b.opts.Count)}
	self := cluster.Replica{Identity: b.opts.Identity, Admin: b.opts.Admin, Stats: b.opts.Stats, Buckets: b.opts.Count}
	replicas := map[string]cluster.Replica{b.opts.Identity: self}
	for _, seen := range b.obs {
		if r, ok := cluster.ReadReplica(b.opts.Prefix, seen.lease); ok && r.Identity != b.opts.Identity && b.live(seen, now) {
			replicas[r.Identity] = r
		}
	}
	for _, r := range replicas {
		if r.Buckets == b.opts.Count {
			t.Members = append(t.Members, r)
		}
	}
	slices.SortFunc(t.Members, func(x, y cluster.Replica) int { return strings.Compare(x.Identity, y.Identity) })
	for i := range t.Holders {
		if tm := b.held[i]; tm != nil && !tm.releasing {
			t.Holders[i] = self
			continue
		}
		seen := b.obs[bucket.Name(b.opts.Prefix, i, b.opts.Count)]
		if seen == nil || !b.live(seen, now) || *seen.lease.Spec.HolderIdentity == b.opts.Identity {
			continue // free, or ours in the past (a lost or released term)
		}
		id := *seen.lease.Spec.HolderIdentity
		if r, ok := replicas[id]; ok {
			t.Holders[i] = r
		} else {
			t.Holders[i] = cluster.Replica{Identity: id} // its own Lease not seen yet: no address
		}
	}
	b.table.Store(t)
}

// Owner says who decides for bucket i now: this replica (self), another
// whose API is at admin, or nobody known (ok false: the bucket is
// changing hands).
func (b *Buckets) Owner(i int) (admin string, self, ok bool) {
	t := b.Table()
	if i < 0 || i >= len(t.Holders) {
		return "", false, false
	}
	h := t.Holders[i]
	switch {
	case h.Identity == t.Self:
		return "", true, true
	case h.Identity == "" || h.Admin == "":
		return "", false, false
	}
	return h.Admin, false, true
}

// Peers are the API addresses of the other live replicas.
func (b *Buckets) Peers() []string {
	t := b.Table()
	var out []string
	for _, m := range t.Members {
		if m.Identity != t.Self && m.Admin != "" {
			out = append(out, m.Admin)
		}
	}
	return out
}

// Count is the number of buckets.
func (b *Buckets) Count() int { return b.opts.Count }

// logTable logs the buckets this replica holds, at a change.
func (b *Buckets) logHeld(what string, i int) {
	b.log.Info(what, zap.String("lease", bucket.Name(b.opts.Prefix, i, b.opts.Count)), zap.Int("bucket", i))
}
