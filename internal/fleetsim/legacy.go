package fleetsim

import (
	"time"

	"ebb.dev/ebb/pkg/autoscaler/bucket"
)

// legacyDecide is the replica's step before issue 33
// (pkg/platform/kubernetes/leader, view and step): a live replica with
// another count turns every take off; otherwise bucket.Plan over its own
// count.
func (s *Sim) legacyDecide(r *replica, local time.Duration) {
	members := []string{r.id}
	for _, o := range r.obs {
		if !o.obj.replica || o.obj.holder == r.id || !s.live(o, local) {
			continue
		}
		if o.obj.count != r.count {
			return // "a replica with another bucket count lives; taking no bucket until it is gone"
		}
		members = append(members, o.obj.holder)
	}
	holders, orphans := make([]string, r.count), make([]bool, r.count)
	for i := range holders {
		t := r.terms[i]
		o, had := r.obs[bucket.Name(prefix, i, r.count)]
		switch {
		case t != nil && t.releasing:
			continue
		case t != nil:
			holders[i] = r.id
		case had && s.live(o, local) && o.obj.holder != r.id:
			holders[i] = o.obj.holder
		}
		if holders[i] != "" {
			r.freeSince[i] = time.Time{}
			continue
		}
		now := time.Time{}.Add(time.Hour + local)
		if r.freeSince[i].IsZero() {
			r.freeSince[i] = now
		}
		orphans[i] = now.Sub(r.freeSince[i]) >= s.C.LeaseDuration
	}
	take, giver, give := bucket.Plan(members, holders, nil)
	for i, m := range take {
		if m == r.id || m != "" && orphans[i] {
			s.acquire(r, i)
		}
	}
	if giver == r.id {
		s.release(r, give)
	}
}

// legacyRoute is the activator's routing before issue 33
// (activatorsource.Autoscalers.recomputeLocked): the count most Leases
// with a holder vote for, whether or not their holders live.
func legacyRoute(rev string, a *activator) (i, n int, holder string, ok bool) {
	votes := map[int]int{}
	for _, o := range a.obs {
		if o.obj.replica {
			continue
		}
		if o.obj.holder != "" {
			votes[o.obj.count] += bucket.MaxCount + 1
		} else {
			votes[o.obj.count]++
		}
	}
	for c, k := range votes {
		if n == 0 || k > votes[n] || k == votes[n] && c > n {
			n = c
		}
	}
	if n == 0 {
		return 0, 0, "", false
	}
	i = bucket.Of(rev, n)
	o, had := a.obs[bucket.Name(prefix, i, n)]
	if !had || o.obj.holder == "" {
		return 0, 0, "", false
	}
	return i, n, o.obj.holder, true
}
