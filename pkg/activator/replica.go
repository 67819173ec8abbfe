package activator

import (
	"sync/atomic"

	"github.com/valyala/fasthttp"
)

// replica is one usable replica of a revision, as the request path sees
// it. The object lives as long as the replica stays usable; its counters
// carry over when the set it belongs to is rebuilt.
type replica struct {
	addr   string               // host:port of the queue-proxy; immutable
	client *fasthttp.HostClient // from the client cache; immutable

	inFlight atomic.Int64 // requests holding a slot on this replica
	capacity atomic.Int64 // this activator's share of the slots; 0 = unlimited
}

// tryTake takes a slot if one is free.
func (r *replica) tryTake() bool {
	c := r.capacity.Load()
	if c == 0 {
		r.inFlight.Add(1)
		return true
	}
	for {
		n := r.inFlight.Load()
		if n >= c {
			return false
		}
		if r.inFlight.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release returns a slot taken by tryTake.
func (r *replica) release() { r.inFlight.Add(-1) }

// replicaSet is an immutable snapshot of a revision's usable replicas,
// sorted by address, with the resolved policy. It is replaced whole.
type replicaSet struct {
	replicas []*replica
	policy   LoadBalancing // never LBAuto
}

var emptySet = &replicaSet{policy: lbPowerOfTwo}

// cursor is the round-robin position of a revision.
type cursor struct{ n atomic.Uint32 }

func (c *cursor) next() uint32 { return c.n.Add(1) - 1 }

// share is this activator's part of a replica's containerConcurrency cc
// when n activators serve the revision: ceil(cc/n), at least 1; 0 stays
// unlimited. Knative gives the same share to every activator for the pods
// it cannot subset evenly; rounding up keeps a small cc usable at the cost
// of letting the activators together exceed cc by at most n-1 (the
// queue-proxy's breaker absorbs that).
func share(cc, n int) int64 {
	if cc == 0 {
		return 0
	}
	n = max(n, 1)
	return int64((cc + n - 1) / n)
}

// subset is Knative's activator subsetting: which of a revision's n
// usable replicas (sorted by address) this activator sends traffic to,
// and its capacity on each, when k activators serve the revision and this
// one is at 1-based position index among them (0: unknown).
//
// The subset is replicas [first, last) plus replica extra when extra >= 0.
//   - Unlimited capacity (cc 0), a single activator or an unknown
//     position: every replica, each with share(cc, k) of its slots (an
//     activator that is not listed among its peers yet shares everything,
//     as in Knative).
//   - k <= n: the replicas are dealt in contiguous runs of n/k, the
//     remainder one each to the first activators; every replica belongs
//     to exactly one activator, which has all cc of its slots.
//   - k > n: activator i takes replica (i-1) mod n and shares its slots
//     with the other activators mapped to it: share(cc, m), m of them.
func subset(n, cc, k, index int) (first, last, extra int, capacity int64) {
	k = max(k, 1)
	if n == 0 || cc == 0 || k == 1 || index < 1 || index > k {
		return 0, n, -1, share(cc, k)
	}
	i := index - 1
	if k > n {
		p := i % n
		m := k / n
		if p < k%n {
			m++
		}
		return p, p + 1, -1, share(cc, m)
	}
	per, rem := n/k, n%k
	first, last, extra = i*per, i*per+per, -1
	if i < rem {
		extra = n - rem + i
	}
	return first, last, extra, int64(cc)
}
