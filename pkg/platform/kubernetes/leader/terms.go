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
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/ptr"

	"ebb.dev/ebb/pkg/autoscaler/bucket"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
)

// The Lease arithmetic, in one place.
const (
	// releasedSeconds is the duration a released Lease is written with
	// (no holder): short, so that a replica that missed the release in
	// its watch still judges it free within a second.
	releasedSeconds = 1
	// goneReplicaDurations is how many lease durations a replica's Lease
	// stays unchanged before any replica removes it: its pod is surely
	// gone (pods are replaced under new names), long past any pause.
	goneReplicaDurations = 10
	// releaseAllDurations bounds, in lease durations, how long a stopping
	// replica waits for its buckets to be let go; past it what is left
	// expires (each hand-off is bounded by handoffTimeout and the fence).
	releaseAllDurations = 2
	// drainPoll is how often a release looks for the writes in flight.
	drainPoll = 5 * time.Millisecond
)

// term is this replica's hold on one bucket.
type term struct {
	// mu serializes the writes of this bucket's Lease (renew, release)
	// and guards the fields below. It is held across those API calls on
	// purpose: only this bucket's writers wait, and a renewal never
	// overwrites the release.
	mu        sync.Mutex
	lease     *coordinationv1.Lease // as last written
	renewed   bucket.Instant        // when the last renewal that succeeded began
	releasing bool                  // given up: its Holder's Lose runs, then the release
	done      bool                  // released or lost: not renewed any more
	// fence is when the last successful write of the Lease began (nil
	// once the term is over, or revoked): Hold reads it without waiting
	// for mu.
	fence atomic.Pointer[bucket.Instant]
	// inflight counts the writes Hold admitted that have not ended: a
	// release waits for none to be left (each ends by its deadline).
	inflight atomic.Int64
	// revoked: the watch showed the Lease deleted or held by another;
	// the fence closed at once, and the next renewal ends the term.
	revoked atomic.Bool
	// gate orders open against close (never held across I/O): once
	// closed, the fence never opens again.
	gate   sync.Mutex
	closed bool // guarded by gate
	// version is lease's resourceVersion, for the watch (revoke) to read
	// without mu.
	version atomic.Pointer[string]
	// renewing: a renewal of this Lease is under way (renewLoop).
	renewing atomic.Bool
	// opensAt: a term taken by creating its Lease opens its fence only
	// from this reading of the monotonic clock on (zero: at once), and
	// its Holder hears of the gain then (gainOnOpen). Guarded by mu.
	opensAt    time.Time
	gainOnOpen bool
}

// open sets the fence from a write that began at began, unless the
// term was closed (let go, lost) or revoked meanwhile: a renewal that
// lands while a release drains its writes must not open the fence again.
// It reports whether the fence is open. t.mu is held.
func (t *term) open(began bucket.Instant) bool {
	t.gate.Lock()
	defer t.gate.Unlock()
	if t.closed || t.revoked.Load() || began.Mono.Before(t.opensAt) {
		return false
	}
	t.fence.Store(&began)
	return true
}

// isClosed: the term was let go, lost or revoked (its fence never opens
// again).
func (t *term) isClosed() bool {
	t.gate.Lock()
	defer t.gate.Unlock()
	return t.closed || t.revoked.Load()
}

// close closes the fence for good (a release, a loss); revoked says the
// watch showed the Lease gone or taken. It never waits for t.mu.
func (t *term) close(revoked bool) {
	t.gate.Lock()
	defer t.gate.Unlock()
	t.closed = true
	if revoked {
		t.revoked.Store(true)
	}
	t.fence.Store(nil)
}

// now is this replica's reading of its clocks.
func (b *Buckets) now() bucket.Instant {
	n := b.opts.Now()
	in := bucket.At(n)
	if b.opts.Wall != nil {
		in.Wall = b.opts.Wall().Round(0)
	}
	return in
}

// left is how long t's fence stays open from now (bucket.FenceLeft);
// zero when closed.
func (b *Buckets) left(t *term) time.Duration {
	f := t.fence.Load()
	if f == nil {
		return 0
	}
	return bucket.FenceLeft(*f, b.now(), b.opts.RenewDeadline)
}

// Owns reports whether this replica may write for bucket i's revisions
// now: it holds the bucket and its fence is open (bucket.FenceLeft: its
// last successful renewal began less than the renew deadline ago, on
// both of its clocks, and the watch has not shown the Lease gone or
// taken). Another replica takes the bucket only after seeing its Lease
// unchanged for a lease duration, so a replica that was paused or cut
// off stops writing before any other may start, without having to hear
// of the loss first.
func (b *Buckets) Owns(i int) bool {
	t := b.term(i)
	return t != nil && b.left(t) > 0
}

// Hold admits one write for bucket i's revisions (fence.Keeper): how
// long it may still take (the fence's time left), and done, called once
// when it has ended; remaining 0 and done nil refuse it. A bucket let go
// voluntarily is released only once every write admitted has ended.
func (b *Buckets) Hold(i int) (remaining time.Duration, done func()) {
	t := b.term(i)
	if t == nil {
		return 0, nil
	}
	// Counted first, then checked: release closes the fence first, then
	// waits for the count, so a write it does not wait for was refused.
	t.inflight.Add(1)
	if remaining = b.left(t); remaining <= 0 {
		t.inflight.Add(-1)
		return 0, nil
	}
	return remaining, sync.OnceFunc(func() { t.inflight.Add(-1) })
}

// leases is the Lease client of Ebb's namespace.
func (b *Buckets) leases() coordinationclient.LeaseInterface {
	return b.opts.Client.CoordinationV1().Leases(b.opts.Namespace)
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
	name := bucket.Name(b.opts.Prefix, i, b.opts.Count)
	b.mu.Lock()
	_, have := b.held[i]
	seen := b.obs[name]
	taken := seen != nil && b.live(seen, b.opts.Now()) && *seen.lease.Spec.HolderIdentity != b.opts.Identity // its own previous process's: it may take it over
	b.mu.Unlock()
	if have || taken {
		return
	}
	began := b.now()
	now := metav1.NewMicroTime(began.Wall)
	spec := coordinationv1.LeaseSpec{HolderIdentity: ptr.To(b.opts.Identity), LeaseDurationSeconds: ptr.To(int32(b.opts.LeaseDuration / time.Second)),
		AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptr.To(int32(0))}
	cl := b.leases()
	// The take and its confirming List may take a renew deadline, as a
	// renewal may (renew): cut at the retry period, a loaded API server
	// that answers in more left a lost bucket without a holder for as
	// long as it was slow. The term counts from when the take began.
	cctx, cancel := context.WithTimeout(ctx, b.opts.RenewDeadline)
	defer cancel()
	var got *coordinationv1.Lease
	var err error
	if seen == nil || seen.deleted {
		got, err = cl.Create(cctx, b.leaseObject(name, cluster.ComponentBucket, spec), metav1.CreateOptions{})
	} else {
		l := seen.lease.DeepCopy()
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
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = ptr.To(""), ptr.To(int32(releasedSeconds))
		if _, err := cl.Update(cctx, l, metav1.UpdateOptions{}); err != nil {
			b.log.Warn("letting a bucket go after a take that overlaps another count failed; it expires instead",
				zap.String("lease", name), zap.Error(err))
		}
		b.mu.Lock()
		b.backoff = b.opts.Now().Add(b.opts.RetryPeriod + rand.N(2*b.opts.RetryPeriod))
		b.mu.Unlock()
		b.log.Info("let a bucket go at once: "+why, zap.String("lease", name))
		return
	}
	t := &term{lease: got, renewed: began}
	t.version.Store(&got.ResourceVersion)
	if seen == nil || seen.deleted {
		// The Lease did not exist: never made, or deleted by hand (or
		// swept) while a replica that this one never saw hold it may
		// still be writing: its fence stays open up to the renew deadline
		// after its last renewal, before the deletion. So this term
		// writes only a lease duration after the Lease was made, as late
		// as a take of a Lease seen to lapse.
		t.opensAt, t.gainOnOpen = b.opts.Now().Add(b.opts.LeaseDuration), true
		b.mu.Lock()
		b.held[i] = t
		b.mu.Unlock()
		b.log.Info("took a bucket whose Lease did not exist: its revisions are decided here after a lease duration "+
			"(a holder that never showed may still be writing)", zap.String("lease", name), zap.Int("bucket", i))
		return
	}
	t.open(began)
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
	list, err := b.leases().List(ctx, metav1.ListOptions{LabelSelector: fleetSelector})
	if err != nil {
		return "the Leases could not be read to confirm the take: " + err.Error()
	}
	for k := range list.Items {
		b.observe(&list.Items[k], false)
	}
	b.observe(got, false)
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ls := b.seenLocked(b.opts.Now())
	if bucket.Conflict(i, b.opts.Count, ls) {
		return "a live Lease of another bucket count covers some of its revisions"
	}
	return ""
}

// removeStale removes a Lease of a bucket count no live replica uses,
// once it lapsed or was let go, on the resourceVersion seen: a holder that
// renewed it since keeps it, and one that comes back to renew it finds
// it gone and stops.
func (b *Buckets) removeStale(ctx context.Context, l bucket.Lease) {
	name := bucket.Name(b.opts.Prefix, l.Index, l.Count)
	b.mu.Lock()
	seen := b.obs[name]
	b.mu.Unlock()
	if seen == nil || seen.deleted {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, b.opts.RetryPeriod)
	defer cancel()
	rv := seen.lease.ResourceVersion
	err := b.leases().Delete(cctx, name,
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
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: b.opts.Namespace,
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
				b.opts.Holder.Gain(ctx, i)
			case lost:
				b.opts.Holder.Lose(ctx, i)
			case released:
				b.handOff(ctx, i)
			}
		}
	}
}

// handOff lets bucket i go: its Holder's Lose, for at most the hand-off
// timeout, then the release, whether Lose has returned or not. The fence
// closes before the release and the release waits for the writes in
// flight, so whatever Lose did not stop in time can no longer write; the
// next holder decides within the bound, not whenever Lose returns. The
// Holder's next call for the bucket still waits for this Lose to return
// (its calls come one at a time).
func (b *Buckets) handOff(ctx context.Context, i int) {
	if t := b.term(i); t != nil {
		t.mu.Lock()
		untold := t.gainOnOpen
		t.mu.Unlock()
		if untold { // its fence never opened: nothing of it is decided here
			b.release(ctx, i)
			return
		}
	}
	lctx, cancel := context.WithTimeout(ctx, b.opts.HandoffTimeout)
	defer cancel()
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		b.opts.Holder.Lose(lctx, i)
	}()
	select {
	case <-returned:
	case <-lctx.Done():
		b.log.Warn("a bucket's hand-off did not end within its timeout: its Lease is let go anyway, and its writes are fenced",
			zap.Int("bucket", i), zap.Duration("timeout", b.opts.HandoffTimeout))
	}
	b.release(ctx, i)
	<-returned
}

// release lets bucket i's Lease go (no holder: another replica takes it
// at once) and forgets the term: the fence closes first, then the writes
// in flight end (each by its deadline, the fence's time left when it was
// sent), and only then is the Lease written.
func (b *Buckets) release(ctx context.Context, i int) {
	t := b.term(i)
	if t == nil {
		return
	}
	t.close(false)
	b.drain(t)
	t.mu.Lock()
	if !t.done {
		l := t.lease.DeepCopy()
		now := metav1.NewMicroTime(b.now().Wall)
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = ptr.To(""), ptr.To(int32(releasedSeconds)), &now
		cctx, cancel := context.WithTimeout(ctx, b.opts.RenewDeadline)
		if _, err := b.leases().Update(cctx, l, metav1.UpdateOptions{}); err != nil {
			b.log.Warn("releasing a bucket failed; it expires instead", zap.String("lease", l.Name), zap.Error(err))
		}
		cancel()
		t.done = true
	}
	t.mu.Unlock()
	b.mu.Lock()
	if b.held[i] == t {
		delete(b.held, i)
	}
	b.mu.Unlock()
	b.logHeld("let a bucket go", i)
	b.poke()
}

// drain waits until no write Hold admitted for t is in flight, for at
// most the renew deadline (no write outlives its deadline, at most the
// renew deadline from when it was sent; one whose answer is never read
// does, and is waited for no longer).
func (b *Buckets) drain(t *term) {
	for deadline := time.Now().Add(b.opts.RenewDeadline); t.inflight.Load() > 0; time.Sleep(drainPoll) {
		if time.Now().After(deadline) {
			b.log.Warn("writes for a bucket being let go are still in flight past the renew deadline", zap.Int64("writes", t.inflight.Load()))
			return
		}
	}
}

func (b *Buckets) poke() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// renewLoop renews this replica's Lease and every held bucket's, every
// retry period and at once when the watch revokes a term, until ctx
// ends. Each Lease is renewed on its own: a renewal the API server is
// slow to answer (it may take up to its term's renew deadline) delays
// neither the other buckets' renewals nor the next round's, and the
// same Lease is never renewed twice at once (its round is skipped).
func (b *Buckets) renewLoop(ctx context.Context) {
	replica := &term{}
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		if replica.renewing.CompareAndSwap(false, true) {
			wg.Go(func() {
				defer replica.renewing.Store(false)
				b.renewReplica(ctx, replica)
			})
		}
		b.mu.Lock()
		terms := make(map[int]*term, len(b.held))
		for i, t := range b.held {
			terms[i] = t
		}
		b.mu.Unlock()
		for i, t := range terms {
			if t.renewing.CompareAndSwap(false, true) {
				wg.Go(func() {
					defer t.renewing.Store(false)
					b.renew(ctx, i, t)
				})
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-b.renewNow:
		case <-time.After(b.opts.RetryPeriod):
		}
	}
}

// renew renews one bucket's Lease. A conflict means another replica
// wrote it: the bucket is lost unless the Lease still names this one. A
// renewal that has not succeeded for the renew deadline loses it too,
// before any other replica may take it (a lease duration), and so does
// a term the watch revoked.
func (b *Buckets) renew(ctx context.Context, i int, t *term) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return
	}
	if t.revoked.Load() {
		b.lose(i, t, "its Lease was removed or names another holder")
		return
	}
	began := b.now()
	left := bucket.FenceLeft(t.renewed, began, b.opts.RenewDeadline)
	if left <= 0 {
		// Paused, suspended, or cut off: another replica may have judged
		// the Lease lapsed. A renewal now would land on a Lease nobody
		// took (of a count nobody else uses) and make two holders.
		b.lose(i, t, "not renewed within the renew deadline")
		return
	}
	l := t.lease.DeepCopy()
	now := metav1.NewMicroTime(began.Wall)
	l.Spec.RenewTime = &now
	cl := b.leases()
	// The renewal may take what is left of the term, as client-go's
	// leader election lets its renewal run to the renew deadline: a
	// loaded API server (a slow etcd) that answers in more than a retry
	// period still renews, where cutting each try at the retry period
	// would lose a healthy replica's buckets because every try is cut.
	// Safe however late it lands: it writes on the resourceVersion last
	// seen (another replica's take in between makes it a conflict), and
	// the fence counts from when it began.
	cctx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	got, err := cl.Update(cctx, l, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		if cur, gerr := cl.Get(cctx, l.Name, metav1.GetOptions{}); gerr == nil && ptr.Deref(cur.Spec.HolderIdentity, "") == b.opts.Identity {
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
		t.version.Store(&got.ResourceVersion)
		if t.open(began) && t.gainOnOpen {
			t.gainOnOpen = false
			b.logHeld("took a bucket", i)
			b.queue(i, gained)
		}
	case apierrors.IsNotFound(err):
		b.lose(i, t, "its Lease was removed")
	case bucket.FenceLeft(t.renewed, b.now(), b.opts.RenewDeadline) <= 0:
		b.lose(i, t, "not renewed within the renew deadline: "+err.Error())
	default:
		b.log.Debug("renewing a bucket failed; trying again", zap.String("lease", l.Name), zap.Error(err))
	}
}

// lose ends a term this replica no longer holds. t.mu is held.
func (b *Buckets) lose(i int, t *term, why string) {
	t.done = true
	t.close(false)
	b.mu.Lock()
	if b.held[i] == t {
		delete(b.held, i)
	}
	b.mu.Unlock()
	b.log.Warn("lost a bucket; its revisions are no longer decided here", zap.String("lease", t.lease.Name), zap.String("why", why))
	if !t.releasing && !t.gainOnOpen { // a release already tells the Holder; one never told of the gain has nothing to lose
		b.queue(i, lost)
	}
	b.poke()
}

// revoke closes bucket i's fence at once when the watch shows its Lease
// deleted or naming another holder, in a version newer than the one this
// replica last wrote (an event older than its own write is not news);
// the renew loop then ends the term without waiting for its period. It
// never waits for the term's mutex (held across the Lease's API calls).
func (b *Buckets) revoke(l *coordinationv1.Lease, deleted bool) {
	i, n, holder, ok := cluster.ReadBucket(b.opts.Prefix, l)
	if !ok || n != b.opts.Count || (!deleted && holder == b.opts.Identity) {
		return
	}
	t := b.term(i)
	if t == nil || t.isClosed() {
		return // not held, or its fence already closed for good (let go, lost)
	}
	if older(l.ResourceVersion, t.writtenVersion()) {
		return
	}
	t.close(true)
	what := "names another holder"
	if deleted {
		what = "was removed"
	}
	b.log.Warn("the watch shows a held bucket's Lease gone: its writes stop at once", zap.Int("bucket", i), zap.String("lease", l.Name),
		zap.String("why", what), zap.String("holder", holder))
	select {
	case b.renewNow <- struct{}{}:
	default:
	}
}

// writtenVersion is the resourceVersion of the Lease as this term last
// wrote it (the renewals and the take), read without t.mu.
func (t *term) writtenVersion() string {
	if v := t.version.Load(); v != nil {
		return *v
	}
	return ""
}

// older reports whether resourceVersion a is known to precede b. The API
// server's versions are etcd's revisions, integers that grow with every
// write; anything else is not comparable, and is taken as news (a
// needless hand-off costs less than a second writer).
func older(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return err1 == nil && err2 == nil && x < y
}

// releaseAll gives up every held bucket and waits until each is let go,
// bounded by releaseAllDurations lease durations (past it, what is left
// expires).
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
	deadline := time.Now().Add(releaseAllDurations * b.opts.LeaseDuration)
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
	now := metav1.NewMicroTime(b.opts.Now())
	cl := b.leases()
	cctx, cancel := context.WithTimeout(ctx, b.opts.RenewDeadline) // a slow API server still renews (renewLoop)
	defer cancel()
	name := cluster.ReplicaLeaseName(b.opts.Prefix, b.opts.Identity)
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
	l.Annotations = map[string]string{cluster.AnnotationAdmin: b.opts.Admin, cluster.AnnotationStats: b.opts.Stats,
		cluster.AnnotationBuckets: strconv.Itoa(b.opts.Count)}
	l.Spec = coordinationv1.LeaseSpec{HolderIdentity: ptr.To(b.opts.Identity), LeaseDurationSeconds: ptr.To(int32(b.opts.LeaseDuration / time.Second)),
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
	cctx, cancel := context.WithTimeout(ctx, b.opts.RenewDeadline)
	defer cancel()
	name := cluster.ReplicaLeaseName(b.opts.Prefix, b.opts.Identity)
	if err := b.leases().Delete(cctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
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
	for name, seen := range b.obs {
		if _, ok := cluster.ReadReplica(b.opts.Prefix, seen.lease); ok && now.Sub(seen.changed) > goneReplicaDurations*b.durationOf(seen.lease) {
			gone = append(gone, name)
		}
	}
	b.mu.Unlock()
	for _, name := range gone {
		cctx, cancel := context.WithTimeout(ctx, b.opts.RetryPeriod)
		err := b.leases().Delete(cctx, name, metav1.DeleteOptions{})
		cancel()
		if err != nil && !apierrors.IsNotFound(err) {
			b.log.Debug("removing a gone replica's Lease failed", zap.String("lease", name), zap.Error(err))
		}
	}
}
