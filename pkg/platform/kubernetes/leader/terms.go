package leader

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"ebb.dev/ebb/pkg/autoscaler/bucket"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
)

// term is this replica's hold on one bucket.
type term struct {
	// mu serializes the writes of this bucket's Lease (renew, release)
	// and guards the fields below. It is held across those API calls on
	// purpose: only this bucket's writers wait, and a renewal never
	// overwrites the release.
	mu        sync.Mutex
	lease     *coordinationv1.Lease // as last written
	renewed   time.Time             // when the last renewal that succeeded began
	releasing bool                  // given up: its Holder's Lose runs, then the release
	done      bool                  // released or lost: not renewed any more
	// fence is when the last successful write of the Lease began (nil
	// once the term is over): Owns reads it without waiting for mu.
	fence atomic.Pointer[time.Time]
}

// open sets the fence from a write that began at began. t.mu is held.
func (t *term) open(began time.Time) { t.fence.Store(&began) }

// Owns is the fence of every write this replica makes for bucket i's
// revisions (their scale, route, learned state, status), checked just
// before the write is sent: true while it holds the bucket and its last
// successful renewal began less than the renew deadline ago, on this
// replica's clock (bucket.Owns). Another replica takes the bucket only
// after seeing its Lease unchanged for a lease duration, so a replica
// that was paused or cut off stops writing before any other may start,
// without having to hear of the loss first.
func (b *Buckets) Owns(i int) bool {
	t := b.term(i)
	if t == nil {
		return false
	}
	f := t.fence.Load()
	return f != nil && bucket.Owns(*f, b.o.Now(), b.o.RenewDeadline)
}

// termEvent is one call for a bucket's worker.
type termEvent int

const (
	gained   termEvent = iota // tell the Holder
	lost                      // tell the Holder, after the fact
	released                  // tell the Holder, then let the Lease go
)

// acquire takes bucket i's Lease if it is free or expired as last seen:
// a Create, or an Update on the resourceVersion seen, so that of two
// replicas trying at once one wins, and none takes a Lease renewed since.
func (b *Buckets) acquire(ctx context.Context, i int) {
	name := bucket.Name(b.o.Prefix, i, b.o.Count)
	b.mu.Lock()
	_, have := b.held[i]
	o := b.obs[name]
	taken := o != nil && b.live(o, b.o.Now()) && *o.lease.Spec.HolderIdentity != b.o.Identity // its own previous process's: it may take it over
	b.mu.Unlock()
	if have || taken {
		return
	}
	now := metav1.NewMicroTime(b.o.Now())
	spec := coordinationv1.LeaseSpec{HolderIdentity: ptr.To(b.o.Identity), LeaseDurationSeconds: ptr.To(int32(b.o.LeaseDuration / time.Second)),
		AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptr.To(int32(0))}
	cl := b.o.Client.CoordinationV1().Leases(b.o.Namespace)
	cctx, cancel := context.WithTimeout(ctx, b.o.RetryPeriod)
	defer cancel()
	var got *coordinationv1.Lease
	var err error
	if o == nil {
		got, err = cl.Create(cctx, b.leaseObject(name, cluster.ComponentBucket, spec), metav1.CreateOptions{})
	} else {
		l := o.lease.DeepCopy()
		if t := l.Spec.LeaseTransitions; t != nil {
			spec.LeaseTransitions = ptr.To(*t + 1)
		}
		l.Spec = spec
		got, err = cl.Update(cctx, l, metav1.UpdateOptions{})
	}
	if err != nil {
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			b.log.Warn("taking a bucket failed; trying again", zap.String("lease", name), zap.Error(err))
		}
		return // another replica took it first, or the next step tries again
	}
	if why := b.overlapped(cctx, i, got); why != "" {
		l := got.DeepCopy()
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = ptr.To(""), ptr.To(int32(1))
		if _, err := cl.Update(cctx, l, metav1.UpdateOptions{}); err != nil {
			b.log.Warn("letting a bucket go after a take that overlaps another count failed; it expires instead",
				zap.String("lease", name), zap.Error(err))
		}
		b.mu.Lock()
		b.backoff = b.o.Now().Add(b.o.RetryPeriod + rand.N(2*b.o.RetryPeriod))
		b.mu.Unlock()
		b.log.Info("let a bucket go at once: "+why, zap.String("lease", name))
		return
	}
	t := &term{lease: got, renewed: now.Time}
	t.open(now.Time)
	b.mu.Lock()
	b.held[i] = t
	b.mu.Unlock()
	b.logHeld("took a bucket", i)
	b.queue(i, gained)
}

// overlapped reads the fleet's Leases afresh after a take (a quorum
// List: it follows the take) and says why bucket i must not be decided
// here ("" when it may): a live Lease of another bucket count covers some
// of its revisions (bucket.Conflict). Two replicas of two counts taking
// overlapping buckets at once each read after their own write, so at
// least one sees the other's, and lets go.
func (b *Buckets) overlapped(ctx context.Context, i int, got *coordinationv1.Lease) string {
	list, err := b.o.Client.CoordinationV1().Leases(b.o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: fleetSelector})
	if err != nil {
		return "the Leases could not be read to confirm the take: " + err.Error()
	}
	for k := range list.Items {
		b.observe(&list.Items[k], false)
	}
	b.observe(got, false)
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ls := b.seenLocked(b.o.Now())
	if bucket.Conflict(i, b.o.Count, ls) {
		return "a live Lease of another bucket count covers some of its revisions"
	}
	return ""
}

// removeStale removes a Lease of a bucket count no live replica uses,
// once it lapsed or was let go, on the resourceVersion seen: a holder that
// renewed it since keeps it, and one that comes back to renew it finds
// it gone and stops.
func (b *Buckets) removeStale(ctx context.Context, l bucket.Lease) {
	name := bucket.Name(b.o.Prefix, l.Index, l.Count)
	b.mu.Lock()
	o := b.obs[name]
	b.mu.Unlock()
	if o == nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, b.o.RetryPeriod)
	defer cancel()
	rv := o.lease.ResourceVersion
	err := b.o.Client.CoordinationV1().Leases(b.o.Namespace).Delete(cctx, name,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
	switch {
	case err == nil:
		b.log.Info("removed a lapsed Lease of a bucket count no replica uses", zap.String("lease", name))
	case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
		b.log.Debug("removing a lapsed Lease failed", zap.String("lease", name), zap.Error(err))
	}
}

// queue hands the Holder's call for bucket i to its worker, without
// waiting: the renewals that lose a bucket must never wait for a Holder.
func (b *Buckets) queue(i int, ev termEvent) {
	b.mu.Lock()
	b.events[i] = append(b.events[i], ev)
	b.mu.Unlock()
	select {
	case b.signal[i] <- struct{}{}:
	default:
	}
}

// leaseObject is a new Lease of the fleet.
func (b *Buckets) leaseObject(name, component string, spec coordinationv1.LeaseSpec) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: b.o.Namespace,
		Labels: map[string]string{config.ComponentLabel: component, config.PartOfLabel: config.ManagedBy, config.ManagedByLabel: config.ManagedBy}},
		Spec: spec}
}

// term is this replica's hold on bucket i; nil when it holds none.
func (b *Buckets) term(i int) *term {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held[i]
}

// giveUp lets bucket i go for a replica with fewer: its worker tells the
// Holder, then releases the Lease.
func (b *Buckets) giveUp(i int) {
	t := b.term(i)
	if t == nil {
		return
	}
	t.mu.Lock()
	first := !t.releasing && !t.done
	t.releasing = true
	t.mu.Unlock()
	if first {
		b.logHeld("giving a bucket up to a replica with fewer", i)
		b.queue(i, released)
	}
}

// work makes the Holder's calls for bucket i in order until ctx ends.
func (b *Buckets) work(ctx context.Context, i int) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.signal[i]:
		}
		b.mu.Lock()
		evs := b.events[i]
		b.events[i] = nil
		b.mu.Unlock()
		for _, ev := range evs {
			switch ev {
			case gained:
				b.o.Holder.Gain(ctx, i)
			case lost:
				b.o.Holder.Lose(ctx, i)
			case released:
				b.o.Holder.Lose(ctx, i)
				b.release(ctx, i)
			}
		}
	}
}

// release lets bucket i's Lease go (no holder: another replica takes it
// at once) and forgets the term.
func (b *Buckets) release(ctx context.Context, i int) {
	t := b.term(i)
	if t == nil {
		return
	}
	t.mu.Lock()
	if !t.done {
		l := t.lease.DeepCopy()
		now := metav1.NewMicroTime(b.o.Now())
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = ptr.To(""), ptr.To(int32(1)), &now
		cctx, cancel := context.WithTimeout(ctx, b.o.RenewDeadline)
		if _, err := b.o.Client.CoordinationV1().Leases(b.o.Namespace).Update(cctx, l, metav1.UpdateOptions{}); err != nil {
			b.log.Warn("releasing a bucket failed; it expires instead", zap.String("lease", l.Name), zap.Error(err))
		}
		cancel()
		t.done = true
	}
	t.fence.Store(nil)
	t.mu.Unlock()
	b.mu.Lock()
	if b.held[i] == t {
		delete(b.held, i)
	}
	b.mu.Unlock()
	b.logHeld("let a bucket go", i)
	b.poke()
}

func (b *Buckets) poke() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// renewLoop renews this replica's Lease and every held bucket's, every
// retry period, until ctx ends.
func (b *Buckets) renewLoop(ctx context.Context) {
	replica := &term{}
	for {
		b.renewReplica(ctx, replica)
		b.mu.Lock()
		terms := make(map[int]*term, len(b.held))
		for i, t := range b.held {
			terms[i] = t
		}
		b.mu.Unlock()
		var wg sync.WaitGroup
		for i, t := range terms {
			wg.Go(func() { b.renew(ctx, i, t) })
		}
		wg.Wait()
		select {
		case <-ctx.Done():
			return
		case <-time.After(b.o.RetryPeriod):
		}
	}
}

// renew renews one bucket's Lease. A conflict means another replica
// wrote it: the bucket is lost unless the Lease still names this one. A
// renewal that has not succeeded for the renew deadline loses it too,
// before any other replica may take it (a lease duration).
func (b *Buckets) renew(ctx context.Context, i int, t *term) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return
	}
	began := b.o.Now()
	if began.Sub(t.renewed) >= b.o.RenewDeadline {
		// Paused, or cut off: another replica may have judged the Lease
		// lapsed. A renewal now would land on a Lease nobody took (of a
		// count nobody else uses) and make two holders.
		b.lose(i, t, "not renewed within the renew deadline")
		return
	}
	l := t.lease.DeepCopy()
	now := metav1.NewMicroTime(began)
	l.Spec.RenewTime = &now
	cl := b.o.Client.CoordinationV1().Leases(b.o.Namespace)
	cctx, cancel := context.WithTimeout(ctx, b.o.RetryPeriod)
	defer cancel()
	got, err := cl.Update(cctx, l, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		if cur, gerr := cl.Get(cctx, l.Name, metav1.GetOptions{}); gerr == nil && ptr.Deref(cur.Spec.HolderIdentity, "") == b.o.Identity {
			cur.Spec.RenewTime = &now
			got, err = cl.Update(cctx, cur, metav1.UpdateOptions{})
		} else if gerr == nil {
			b.lose(i, t, "another replica holds it")
			return
		}
	}
	switch {
	case err == nil:
		t.lease, t.renewed = got, began
		t.open(began)
	case apierrors.IsNotFound(err):
		b.lose(i, t, "its Lease was removed")
	case began.Sub(t.renewed) >= b.o.RenewDeadline:
		b.lose(i, t, "not renewed within the renew deadline: "+err.Error())
	default:
		b.log.Debug("renewing a bucket failed; trying again", zap.String("lease", l.Name), zap.Error(err))
	}
}

// lose ends a term this replica no longer holds. t.mu is held.
func (b *Buckets) lose(i int, t *term, why string) {
	t.done = true
	t.fence.Store(nil)
	b.mu.Lock()
	if b.held[i] == t {
		delete(b.held, i)
	}
	b.mu.Unlock()
	b.log.Warn("lost a bucket; its revisions are no longer decided here", zap.String("lease", t.lease.Name), zap.String("why", why))
	if !t.releasing { // a release already tells the Holder
		b.queue(i, lost)
	}
	b.poke()
}

// releaseAll gives up every held bucket and waits until each is let go,
// bounded by twice the lease duration (past it, what is left expires).
func (b *Buckets) releaseAll() {
	b.mu.Lock()
	var is []int
	for i := range b.held {
		is = append(is, i)
	}
	b.mu.Unlock()
	for _, i := range is {
		b.giveUp(i)
	}
	deadline := time.Now().Add(2 * b.o.LeaseDuration)
	for time.Now().Before(deadline) {
		b.mu.Lock()
		n := len(b.held)
		b.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.log.Warn("some buckets were not let go in time; they expire instead")
}

// renewReplica writes this replica's Lease: that it lives, its bucket
// count and where it answers.
func (b *Buckets) renewReplica(ctx context.Context, t *term) {
	now := metav1.NewMicroTime(b.o.Now())
	cl := b.o.Client.CoordinationV1().Leases(b.o.Namespace)
	cctx, cancel := context.WithTimeout(ctx, b.o.RetryPeriod)
	defer cancel()
	name := cluster.ReplicaLeaseName(b.o.Prefix, b.o.Identity)
	l := t.lease
	if l == nil {
		cur, err := cl.Get(cctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			l = b.leaseObject(name, cluster.ComponentReplica, coordinationv1.LeaseSpec{})
		case err != nil:
			b.log.Warn("reading this replica's Lease failed; trying again", zap.Error(err))
			return
		default:
			l = cur
		}
	}
	l = l.DeepCopy()
	l.Annotations = map[string]string{cluster.AnnotationAdmin: b.o.Admin, cluster.AnnotationStats: b.o.Stats,
		cluster.AnnotationBuckets: strconv.Itoa(b.o.Count)}
	l.Spec = coordinationv1.LeaseSpec{HolderIdentity: ptr.To(b.o.Identity), LeaseDurationSeconds: ptr.To(int32(b.o.LeaseDuration / time.Second)),
		RenewTime: &now}
	var err error
	if l.ResourceVersion == "" {
		t.lease, err = cl.Create(cctx, l, metav1.CreateOptions{})
	} else {
		t.lease, err = cl.Update(cctx, l, metav1.UpdateOptions{})
	}
	if err != nil {
		t.lease = nil // read it again next time
		b.log.Warn("renewing this replica's Lease failed; trying again", zap.Error(err))
	}
}

// deleteReplicaLease removes this replica's Lease at stop: the others
// count one replica less at once.
func (b *Buckets) deleteReplicaLease(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, b.o.RenewDeadline)
	defer cancel()
	name := cluster.ReplicaLeaseName(b.o.Prefix, b.o.Identity)
	if err := b.o.Client.CoordinationV1().Leases(b.o.Namespace).Delete(cctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		b.log.Warn("removing this replica's Lease failed; it expires instead", zap.Error(err))
	}
}

// sweep removes, at most once a minute, the Leases of replicas gone for
// ten lease durations (pods are replaced under new names; their Leases
// would pile up). Any replica may do it; a second delete finds nothing.
func (b *Buckets) sweep(ctx context.Context, now time.Time) {
	b.mu.Lock()
	if now.Sub(b.swept) < time.Minute {
		b.mu.Unlock()
		return
	}
	b.swept = now
	var gone []string
	for name, o := range b.obs {
		if _, ok := cluster.ReadReplica(b.o.Prefix, o.lease); ok && now.Sub(o.changed) > 10*b.durationOf(o.lease) {
			gone = append(gone, name)
		}
	}
	b.mu.Unlock()
	for _, name := range gone {
		cctx, cancel := context.WithTimeout(ctx, b.o.RetryPeriod)
		err := b.o.Client.CoordinationV1().Leases(b.o.Namespace).Delete(cctx, name, metav1.DeleteOptions{})
		cancel()
		if err != nil && !apierrors.IsNotFound(err) {
			b.log.Debug("removing a gone replica's Lease failed", zap.String("lease", name), zap.Error(err))
		}
	}
}
