package leader

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	k8s "k8s.io/client-go/kubernetes"

	"ebb.dev/ebb/pkg/autoscaler/bucket"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
)

// Holder is told which buckets this replica holds. Gain comes once the
// bucket's Lease is held; Lose before it is let go (a replica that joins
// takes it over, or this one stops), or as soon as it is lost (it could
// not be renewed). The calls for one bucket come one at a time, in
// order; those of different buckets may run at once. Lose must return
// only when nothing of the bucket is decided here any more: the Lease is
// released after it.
type Holder interface {
	Gain(ctx context.Context, i int)
	Lose(ctx context.Context, i int)
}

// BucketOptions configure Buckets.
type BucketOptions struct {
	// Client reads and writes the Leases. Give it a client of its own,
	// with its own rate limits (kubernetes.NewClients' lease client), as
	// kube-controller-manager does for its leader election: renewals
	// must never wait behind a burst of writes.
	Client k8s.Interface
	Logger *zap.Logger
	// Namespace holds the Leases.
	Namespace string
	// Prefix names the Leases: bucket.Name(Prefix, i, Count) for the
	// buckets, cluster.ReplicaLeaseName(Prefix, Identity) for this replica
	// (default config.AutoscalerName).
	Prefix string
	// Identity is this replica's name (the pod name).
	Identity string
	// Count is the number of buckets (bucket.CheckCount).
	Count int
	// Admin and Stats are this replica's API and stats addresses
	// (host:port), published on its Lease for the other replicas and the
	// activators.
	Admin, Stats string
	// LeaseDuration, RenewDeadline and RetryPeriod are those of the
	// leader election (defaults 15s, 10s, 2s): a dead replica's buckets
	// are taken within about LeaseDuration + RetryPeriod; a holder that
	// could not renew for RenewDeadline stops deciding (before another
	// may take the bucket).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Holder hears of the buckets gained and lost.
	Holder Holder
	// HandoffTimeout bounds the Holder's Lose when this replica lets a
	// bucket go (default the retry period): the Lease is released after
	// it whether Lose returned or not (its writes are fenced by then), so
	// a bucket changes hands within HandoffTimeout + the renew deadline
	// (the writes in flight, each bounded by the fence) + one API call.
	HandoffTimeout time.Duration
	// Now is the clock (default time.Now). Expiry is judged on it from
	// when a Lease was last seen to change, never from the time written in
	// it, so the replicas' clocks need not agree.
	Now func() time.Time
	// Wall is the wall clock (default: Now's reading without its
	// monotonic part). The fence measures the time since a renewal on
	// both and takes the longer: the monotonic clock stops while the node
	// is suspended, the wall clock does not.
	Wall func() time.Time
}

// Buckets holds some of the fleet's bucket Leases for this replica, as
// many as its share, and tells its Holder (see Run). Build it with
// NewBuckets.
type Buckets struct {
	opts  BucketOptions
	log   *zap.Logger
	wake  chan struct{} // buffered 1: a Lease changed
	table atomic.Pointer[table]

	mu       sync.Mutex // guards the fields below; never held across I/O
	obs      map[string]*observed
	held     map[int]*term
	freeFrom []time.Time // per bucket: since when it is seen free (zero: held)
	mismatch string      // the live replica with another count, last warned about
	swept    time.Time   // when the Leases of gone replicas were last removed
	backoff  time.Time   // no take before it: a take yielded to another count's Lease

	events   [][]termEvent   // per bucket, the Holder's calls waiting, in order; guarded by mu
	signal   []chan struct{} // per bucket, buffered 1: events wait
	renewNow chan struct{}   // buffered 1: the watch revoked a term; the renew loop ends it now
}

// observed is a Lease as last seen, and when its holder or renew time
// last changed (this replica's clock).
type observed struct {
	lease   *coordinationv1.Lease
	changed time.Time
	first   time.Time // when first seen
	// deleted: the Lease was removed while another replica held it (by
	// hand, or by a replica sweeping it). Its holder may still be writing
	// until it hears of it, so the Lease counts as held until it would
	// have lapsed; then it is created afresh.
	deleted bool
}

// NewBuckets checks the options; it starts nothing.
func NewBuckets(o BucketOptions) (*Buckets, error) {
	if o.Client == nil || o.Holder == nil || o.Identity == "" || o.Namespace == "" {
		return nil, errors.New("buckets: a client, a holder, the namespace and this replica's identity are required")
	}
	if err := bucket.CheckCount(o.Count); err != nil {
		return nil, fmt.Errorf("--buckets: %w", err)
	}
	if o.Prefix == "" {
		o.Prefix = config.AutoscalerName
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	lo := Options{LeaseDuration: o.LeaseDuration, RenewDeadline: o.RenewDeadline, RetryPeriod: o.RetryPeriod, Logger: o.Logger}
	setLeaderDefaults(&lo)
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod, o.Logger = lo.LeaseDuration, lo.RenewDeadline, lo.RetryPeriod, lo.Logger
	if o.HandoffTimeout <= 0 {
		o.HandoffTimeout = o.RetryPeriod
	}
	if err := bucket.CheckLeaseDuration(o.LeaseDuration); err != nil {
		return nil, fmt.Errorf("buckets: lease duration %w", err)
	}
	if o.RenewDeadline >= o.LeaseDuration {
		return nil, fmt.Errorf("buckets: the renew deadline %v must be shorter than the lease duration %v", o.RenewDeadline, o.LeaseDuration)
	}
	b := &Buckets{opts: o, log: o.Logger, wake: make(chan struct{}, 1), obs: map[string]*observed{}, held: map[int]*term{},
		freeFrom: make([]time.Time, o.Count), events: make([][]termEvent, o.Count), signal: make([]chan struct{}, o.Count),
		renewNow: make(chan struct{}, 1)}
	for i := range b.signal {
		b.signal[i] = make(chan struct{}, 1)
	}
	b.table.Store(&table{Count: o.Count, Self: o.Identity, Holders: make([]cluster.Replica, o.Count)})
	return b, nil
}

// Run holds this replica's share of the buckets until ctx ends, then
// lets every one go (each after its Holder's Lose, so the next holder
// takes it at once) and removes this replica's Lease. It returns when all
// of that is done, or fails at start when the Leases cannot be watched.
//
// The share: a replica keeps what it holds; a free bucket (released, or
// not renewed for a lease duration) goes to the live replica that holds
// the fewest; and when none is free but the loads differ by two or more
// (a replica joined), the most loaded gives one up (bucket.Plan). Each
// replica computes this from the same Leases and acts for itself alone.
func (b *Buckets) Run(ctx context.Context) error {
	life, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	if err := b.watch(life); err != nil {
		return err
	}
	var wg sync.WaitGroup
	for i := range b.signal {
		wg.Go(func() { b.work(life, i) })
	}
	wg.Go(func() { b.renewLoop(life) })
	b.log.Info("holding buckets", zap.Int("buckets", b.opts.Count), zap.String("identity", b.opts.Identity))
	tick := time.NewTicker(b.opts.RetryPeriod)
	defer tick.Stop()
	started := b.opts.Now()
	for ctx.Err() == nil {
		b.step(life, started)
		select {
		case <-ctx.Done():
		case <-b.wake:
		case <-tick.C:
		}
	}
	b.releaseAll()
	b.deleteReplicaLease(life)
	stop()
	wg.Wait()
	return nil
}

// step acts on the plan of the current view (bucket.Decide): take the
// free buckets it gives this replica (or any bucket free for a lease
// duration: its planned holder is not taking it) unless a live Lease of
// another bucket count overlaps them, give up the one it asks of this
// replica, and remove the lapsed Leases of a count no live replica uses.
func (b *Buckets) step(ctx context.Context, started time.Time) {
	now := b.opts.Now()
	b.publish(now)
	if now.Sub(started) < b.opts.RetryPeriod {
		return // at start, the others' Leases may not be seen yet
	}
	b.sweep(ctx, now)
	st := b.decide(now, started)
	for _, l := range st.Sweep {
		b.removeStale(ctx, l)
	}
	b.mu.Lock()
	wait := now.Before(b.backoff)
	b.mu.Unlock()
	if !wait {
		for _, i := range st.Take {
			b.acquire(ctx, i)
		}
	}
	if st.Give >= 0 {
		b.giveUp(st.Give)
	}
	for _, i := range st.Yield {
		b.giveUp(i) // the fleet moves to another bucket count
	}
}

// decide is bucket.Decide on what this replica sees now.
func (b *Buckets) decide(now, started time.Time) bucket.Step {
	b.mu.Lock()
	defer b.mu.Unlock()
	v := bucket.View{Self: b.opts.Identity, Count: b.opts.Count, Young: now.Sub(started) < b.opts.LeaseDuration,
		Held: make([]bool, b.opts.Count), Releasing: make([]bool, b.opts.Count), FreeSince: b.freeFrom, Now: now, LeaseDuration: b.opts.LeaseDuration}
	v.Replicas, v.Leases = b.seenLocked(now)
	for i, t := range b.held {
		v.Held[i], v.Releasing[i] = !t.releasing, t.releasing
	}
	st := bucket.Decide(v)
	b.freeFrom = st.FreeSince
	other := ""
	for _, r := range v.Replicas {
		if r.Count != b.opts.Count {
			other = r.Identity
		}
	}
	b.warnMismatch(other, st.Blocked)
	return st
}

// seenLocked is the live replicas and every bucket Lease, as seen now.
// b.mu is held.
func (b *Buckets) seenLocked(now time.Time) (rs []bucket.Replica, ls []bucket.Lease) {
	for _, seen := range b.obs {
		if r, ok := cluster.ReadReplica(b.opts.Prefix, seen.lease); ok {
			if r.Identity != b.opts.Identity && b.live(seen, now) {
				rs = append(rs, bucket.Replica{Identity: r.Identity, Count: r.Buckets, Young: now.Sub(seen.first) < b.opts.LeaseDuration})
			}
			continue
		}
		if i, n, h, ok := cluster.ReadBucket(b.opts.Prefix, seen.lease); ok {
			ls = append(ls, bucket.Lease{Index: i, Count: n, Holder: h, Live: b.live(seen, now)})
		}
	}
	return rs, ls
}

// warnMismatch logs, once per replica, that one with another bucket
// count lives. b.mu is held.
func (b *Buckets) warnMismatch(other string, blocked []bool) {
	if other != "" && other != b.mismatch {
		n := 0
		for _, x := range blocked {
			if x {
				n++
			}
		}
		b.log.Warn("a replica with another bucket count lives (a --buckets change rolls out): the count most replicas have decides, "+
			"and a bucket is taken only once no live Lease of another count overlaps it",
			zap.String("replica", other), zap.Int("buckets", b.opts.Count), zap.Int("blocked", n))
	}
	b.mismatch = other
}

// live: the Lease has a holder and changed within its duration. b.mu is
// held.
func (b *Buckets) live(seen *observed, now time.Time) bool {
	h := seen.lease.Spec.HolderIdentity
	return h != nil && *h != "" && now.Sub(seen.changed) < b.durationOf(seen.lease)
}

func (b *Buckets) durationOf(l *coordinationv1.Lease) time.Duration {
	if d := l.Spec.LeaseDurationSeconds; d != nil && *d > 0 {
		return time.Duration(*d) * time.Second
	}
	return b.opts.LeaseDuration
}
