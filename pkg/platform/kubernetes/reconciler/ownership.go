package reconciler

import (
	"context"
	"fmt"
	"sync"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/types"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/autoscaler/bucket"
	"ebb.dev/ebb/pkg/platform"
	"ebb.dev/ebb/pkg/platform/kubernetes/fence"
)

// The revisions this replica decides for: with Options.Buckets, those of
// the buckets it holds (Gain, Lose); without, all of them. The revisions
// of the other buckets are another replica's: this one does not feed
// them to its listener, nor touch their Services, routes or scale.

// owned is one bucket's ownership.
type owned struct {
	// mu serializes the bucket's feeds to the listener with its Gain and
	// Lose, so that no revision is fed after its bucket is lost. It is
	// held across the listener's Upsert (no I/O) and, in Lose, across the
	// hand-off (only this bucket's feeds wait).
	mu   sync.Mutex
	held bool
}

// errFenced refuses a write for a revision whose bucket this replica may
// not write for now (SetFence): it lost the bucket, let it go, or has not
// renewed it within the renew deadline (a pause, an API cut-off).
var errFenced = fence.ErrFenced

// SetFence sets the keeper of the buckets (leader.Buckets) every write
// for a revision is held to (its scale, its public EndpointSlice, its
// Services): each is made with a context that names the revision's
// bucket (fence.For), checked before it starts and again by the client's
// transport just before it is sent (fence.Transport), with a deadline
// at the end of the hold. Without it, or without buckets, writes are not
// fenced.
func (p *Platform) SetFence(k fence.Keeper) { p.fence.Store(&k) }

// fenced is ctx for the writes for key, checked now: ErrFenced
// (wrapped) unless this replica may write for key now.
func (p *Platform) fenced(ctx context.Context, key types.NamespacedName) (context.Context, error) {
	b := p.bucketOf(key)
	k := p.fence.Load()
	if b < 0 || k == nil {
		return ctx, nil
	}
	ctx = fence.For(ctx, *k, b)
	if err := fence.Check(ctx); err != nil {
		return ctx, fmt.Errorf("%s/%s: %w", key.Namespace, key.Name, err)
	}
	return ctx, nil
}

// bucketOf is a revision's bucket; -1 without buckets.
func (p *Platform) bucketOf(key types.NamespacedName) int {
	if p.o.Buckets == 0 {
		return -1
	}
	return bucket.Of(key.Namespace+"/"+key.Name, p.o.Buckets)
}

// owns reports whether this replica decides for the revision now.
func (p *Platform) owns(key types.NamespacedName) bool {
	b := p.bucketOf(key)
	if b < 0 {
		return true
	}
	o := &p.own[b]
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.held
}

// Gain makes this replica decide for bucket b's revisions: each is fed to
// the listener now (so that it takes their reports at once), and their
// Services and routes are reconciled.
func (p *Platform) Gain(ctx context.Context, b int) {
	if b < 0 || b >= p.o.Buckets {
		return
	}
	select {
	case <-p.ready:
	case <-ctx.Done():
		return
	}
	o := &p.own[b]
	o.mu.Lock()
	o.held = true
	var keys []types.NamespacedName
	for _, d := range p.inf.deploymentList() {
		key := types.NamespacedName{Namespace: d.Namespace, Name: d.Name}
		if p.bucketOf(key) == b {
			p.feedLocked(d)
			keys = append(keys, key)
		}
	}
	o.mu.Unlock()
	for _, k := range keys {
		p.deps.Add(k)
		p.routes.Add(k)
	}
	p.log.Info("deciding for a bucket's revisions", zap.Int("bucket", b), zap.Int("revisions", len(keys)))
}

// Lose stops deciding for bucket b's revisions: the listener hands them
// off (platform.Handoffer: their deciders stopped, their learned states
// saved) or drops them, and their route state is forgotten. It returns
// when none of them is decided here any more.
func (p *Platform) Lose(ctx context.Context, b int) {
	if b < 0 || b >= p.o.Buckets {
		return
	}
	o := &p.own[b]
	o.mu.Lock()
	defer o.mu.Unlock()
	o.held = false
	var keys []autoscaler.RevisionKey
	p.mu.Lock()
	for k := range p.fed {
		if p.bucketOf(k) == b {
			keys = append(keys, revKey(k))
			delete(p.fed, k)
			delete(p.revs, k)
		}
	}
	for k := range p.starts {
		if p.bucketOf(k) == b {
			p.setStart(k, nil) // its next holder says it again
		}
	}
	for k := range p.bare {
		if p.bucketOf(k) == b {
			p.forgetSidecars(k)
		}
	}
	p.mu.Unlock()
	switch l := p.o.Listener.(type) {
	case nil:
	case platform.Handoffer:
		l.Handoff(ctx, keys...)
	default:
		for _, k := range keys {
			l.Delete(k)
		}
	}
	p.log.Info("handed a bucket's revisions off", zap.Int("bucket", b), zap.Int("revisions", len(keys)))
}
