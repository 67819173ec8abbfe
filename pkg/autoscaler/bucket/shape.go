package bucket

import (
	"slices"
	"time"
)

// The fleet changes shape: --buckets changes in a rollout, so Leases of
// two counts live at once for a while, and a revision is in a bucket of
// each (Of with each count). The rules below keep one decider per
// revision through that: a replica holds a bucket of its count only
// while no live Lease of another count covers any of the same revisions
// (Overlap), it confirms that with a fresh read after each take (two
// replicas taking overlapping Leases of two counts at once each see the
// other's, since each read follows its own write), the Leases of a count
// no live replica uses are removed once they lapse, and an activator
// routes each revision to the live holder of its bucket in whichever
// count covers it (Route), never by a count voted from dead Leases.

// overlap reports whether bucket i of n and bucket j of m can hold the
// same revision: a hash h has h mod n = i and h mod m = j for some h
// exactly when i and j agree modulo gcd(n, m) (the Chinese remainder
// theorem; the 32-bit hash reaches every such h below n*m <= 10,000).
func overlap(i, n, j, m int) bool {
	return (i-j)%gcd(n, m) == 0
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Replica is a live replica as its Lease says: who, and its bucket
// count.
type Replica struct {
	Identity string
	Count    int
	// Young: its Lease was first seen less than a lease duration ago. A
	// young replica judges the others' Leases from when it first saw
	// them, so it would take a dead replica's buckets a lease duration
	// after its own start; the plan gives free buckets to the others
	// (it gets its share from them later, one at a time).
	Young bool
}

// Lease is a bucket Lease as one replica or activator sees it now.
type Lease struct {
	Index, Count int
	// Holder names the replica holding it; "" when it was let go.
	Holder string
	// Live: held, and changed within its duration as the observer's own
	// clock measures from when it saw the change.
	Live bool
}

// Conflict reports whether a live Lease of another count than n, among
// leases, covers some revision of bucket i of n: while it does, bucket i
// of n must not be decided.
func Conflict(i, n int, leases []Lease) bool {
	for _, l := range leases {
		if l.Count != n && l.Live && l.Holder != "" && overlap(i, n, l.Index, l.Count) {
			return true
		}
	}
	return false
}

// View is what one replica sees of the fleet at one step: its identity
// and count, the other live replicas (any count), every bucket Lease (any
// count), and the buckets of its count it holds or is letting go.
type View struct {
	Self      string
	Count     int
	Young     bool // this replica started less than a lease duration ago
	Replicas  []Replica
	Leases    []Lease
	Held      []bool // per bucket of Count: this replica holds it (a term, not being let go)
	Releasing []bool // per bucket of Count: this replica is letting it go
	// FreeSince is per bucket of Count since when it is seen free (zero:
	// held): the previous Step's FreeSince (nil at the first step).
	FreeSince []time.Time
	Now       time.Time
	// LeaseDuration: a bucket free that long is an orphan, which any
	// member takes (its planned taker is not taking it).
	LeaseDuration time.Duration
}

// Step is what a replica does next.
type Step struct {
	// Holders is each bucket of the count's live holder ("" when free).
	Holders []string
	// Blocked are the free buckets of the count that nobody of the count
	// takes: a live Lease of another count overlaps them, or the count is
	// not the Preferred one.
	Blocked []bool
	// FreeSince is per bucket of the count since when it is seen free
	// (zero: held, blocked or being let go): the View's FreeSince of the
	// next step.
	FreeSince []time.Time
	// Members are the live replicas of this count, this one included,
	// sorted.
	Members []string
	// Take are the buckets this replica tries to take; Give is the one it
	// gives up (-1: none).
	Take []int
	Give int
	// Preferred is the bucket count the fleet moves to: the one most live
	// replicas have; on a tie, the one whose live Leases hold the most
	// buckets (the count deciding now keeps deciding), then the smaller. A replica of another count
	// takes nothing and lets go every bucket it holds (Yield), so that two
	// counts never race for a revision, and a rollout moves the buckets
	// once the new pods outnumber the old.
	Preferred int
	Yield     []int
	// Sweep are the Leases of a count no live replica uses that are not
	// live: to be removed (on the resourceVersion seen, so a holder that
	// renews first keeps its Lease).
	Sweep []Lease
}

// Decide computes the step of v.Self (bucket.Plan over the buckets of
// its count that no other count's live Lease blocks). Every replica
// computes it from the same Leases and acts for itself alone.
func Decide(v View) Step {
	f := surveyFleet(v)
	s := Step{Members: f.members, Preferred: preferred(v.Count, f.perCount, v.Leases), Give: -1}
	yielding := s.Preferred != v.Count // this count gives way: it takes nothing, and lets go what it holds
	own, sweep := sortLeases(v, f.counts)
	s.Sweep = sweep
	buckets := assessBuckets(v, own, yielding)
	s.Holders, s.Blocked, s.FreeSince, s.Take = buckets.holders, buckets.blocked, buckets.freeSince, buckets.retake
	if yielding {
		s.Take = nil
		for i, h := range v.Held {
			if h {
				s.Yield = append(s.Yield, i)
			}
		}
		return s
	}
	take, giver, give := Plan(f.planned(), buckets.plan, s.Blocked)
	for i, m := range take {
		if !slices.Contains(s.Take, i) && (m == v.Self || m != "" && buckets.orphan[i]) {
			s.Take = append(s.Take, i)
		}
	}
	if giver == v.Self {
		s.Give = give
	}
	return s
}

// fleet is who is alive, as one replica sees it.
type fleet struct {
	members  []string     // the live replicas of this count, this one included, sorted
	grown    []string     // the members that are not young
	counts   map[int]bool // the bucket counts of the live replicas
	perCount map[int]int  // live replicas per bucket count, this one included
}

func surveyFleet(v View) fleet {
	f := fleet{members: []string{v.Self}, counts: map[int]bool{v.Count: true}, perCount: map[int]int{v.Count: 1}}
	if !v.Young {
		f.grown = append(f.grown, v.Self)
	}
	for _, r := range v.Replicas {
		f.counts[r.Count] = true
		if r.Identity != v.Self {
			f.perCount[r.Count]++
		}
		if r.Count == v.Count && r.Identity != v.Self && !slices.Contains(f.members, r.Identity) {
			f.members = append(f.members, r.Identity)
			if !r.Young {
				f.grown = append(f.grown, r.Identity)
			}
		}
	}
	slices.Sort(f.members)
	return f
}

// planned are the members free buckets are planned for: the grown ones
// (a young replica gets its share later), or all when every one is young.
func (f fleet) planned() []string {
	if len(f.grown) > 0 {
		return slices.Sorted(slices.Values(f.grown))
	}
	return f.members
}

// sortLeases picks the Lease of each bucket of this count (own) and the
// Leases to sweep: not live, of a count no live replica has.
func sortLeases(v View, counts map[int]bool) (own []*Lease, sweep []Lease) {
	own = make([]*Lease, v.Count)
	for k := range v.Leases {
		l := &v.Leases[k]
		switch {
		case l.Count == v.Count && l.Index >= 0 && l.Index < v.Count:
			own[l.Index] = l
		case l.Count != v.Count && !l.Live && !counts[l.Count]:
			sweep = append(sweep, *l)
		}
	}
	return own, sweep
}

// bucketStates is each bucket of this count as this step finds it.
type bucketStates struct {
	holders   []string    // the live holder, "" when free
	plan      []string    // the holder Plan works from: the live holder, this replica for a bucket it takes back
	blocked   []bool      // free, but nobody of this count takes it
	freeSince []time.Time // since when it is seen free (zero: not free)
	orphan    []bool      // free for a lease duration: any member takes it
	retake    []int       // live Leases naming this replica without a term: taken back at once
}

func assessBuckets(v View, own []*Lease, yielding bool) bucketStates {
	b := bucketStates{holders: make([]string, v.Count), plan: make([]string, v.Count), blocked: make([]bool, v.Count),
		freeSince: make([]time.Time, v.Count), orphan: make([]bool, v.Count)}
	for i := range b.holders {
		l := own[i]
		switch {
		case v.Releasing[i]:
			continue // being let go: free for the plan (so nothing else is), not an orphan
		case v.Held[i]:
			b.holders[i] = v.Self
		case l != nil && l.Live && l.Holder != "" && l.Holder != v.Self:
			b.holders[i] = l.Holder
		}
		b.plan[i] = b.holders[i]
		if l != nil && l.Live && l.Holder == v.Self && !v.Held[i] {
			// A live Lease naming this replica without a term: its previous
			// process's (a restart in place), or a take whose answer was
			// lost (a timeout after it landed). Nobody else takes it before
			// it lapses; this replica takes it back at once.
			b.plan[i] = v.Self
			b.retake = append(b.retake, i)
			continue
		}
		if b.plan[i] == "" && (yielding || Conflict(i, v.Count, v.Leases)) {
			b.blocked[i] = true
		}
		if b.plan[i] != "" || b.blocked[i] {
			continue
		}
		b.freeSince[i] = v.Now
		if i < len(v.FreeSince) && !v.FreeSince[i].IsZero() {
			b.freeSince[i] = v.FreeSince[i]
		}
		b.orphan[i] = v.Now.Sub(b.freeSince[i]) >= v.LeaseDuration
	}
	return b
}

// preferred is the count the fleet moves to among the live replicas'
// counts (replicas: how many per count): the one most have. On a tie the
// count that decides now stays (the most live held Leases): a replica of
// the old count that resumes from a pause, or is slow to stop, while the
// rollout is half done must not move every bucket back, only for the
// next new pod to move them forward again; each bucket is handed off at
// most once per rollout. Then the smaller count, so that every replica
// picks the same one.
func preferred(own int, replicas map[int]int, leases []Lease) int {
	holding := map[int]int{}
	for _, l := range leases {
		if l.Live && l.Holder != "" {
			holding[l.Count]++
		}
	}
	best := own
	for n, k := range replicas {
		switch kb := replicas[best]; {
		case k > kb:
			best = n
		case k < kb:
		case holding[n] > holding[best], holding[n] == holding[best] && n < best:
			best = n
		}
	}
	return best
}

// Routes is what an activator knows of the fleet, for Route.
type Routes interface {
	// Counts are the bucket counts of the Leases seen, largest first.
	Counts() []int
	// Holder is bucket i of n's holder and whether its Lease is live.
	Holder(i, n int) (holder string, live bool)
	// Member reports whether identity is a live replica of count n.
	Member(identity string, n int) bool
}

// Route is where a revision's reports go: bucket i of n, held by holder,
// the first count (largest first) whose bucket for the revision has a
// live Lease held by a live replica of that count; ok false while none
// has (the reports wait). A count is never chosen by votes: Leases
// still naming a dead replica lapse, and the live replicas' count routes.
func Route(revision string, r Routes) (i, n int, holder string, ok bool) {
	for _, n := range r.Counts() {
		i := Of(revision, n)
		if h, live := r.Holder(i, n); live && h != "" && r.Member(h, n) {
			return i, n, h, true
		}
	}
	return 0, 0, "", false
}

// Instant is one reading of a replica's two clocks. Mono is time.Now
// with its monotonic reading, immune to steps of the wall clock but
// stopped while the node is suspended (Linux's CLOCK_MONOTONIC); Wall is
// the wall clock (time.Time.Round(0)), which runs on through a suspension
// but can be stepped. A span measured on both, taking the longer, is
// never shorter than the time that passed unless both clocks lost it.
type Instant struct{ Mono, Wall time.Time }

// At is the Instant of one time.Now reading (its monotonic and wall
// parts).
func At(now time.Time) Instant { return Instant{Mono: now, Wall: now.Round(0)} }

// since is the time from i to now: the longer of the two clocks' spans
// (a stopped monotonic clock cannot make it shorter); negative when now
// is before i on the monotonic clock.
func (i Instant) since(now Instant) time.Duration {
	mono := now.Mono.Sub(i.Mono)
	if mono < 0 {
		return mono
	}
	return max(mono, now.Wall.Sub(i.Wall))
}

// FenceLeft is how long a holder whose last successful renewal of a
// bucket's Lease began at renewed may still write for the bucket's
// revisions at now: the renew deadline less the time since, on both of
// its clocks (Instant.Since); zero when the fence is closed (never
// renewed, the deadline passed, or a clock that went backwards).
// Another replica takes the bucket only once it has seen the Lease
// unchanged for a whole lease duration on its clock, which is longer;
// so a holder that was paused, suspended or cut off stops writing before
// anyone else may start, even before it hears of the loss. Every write
// gets what is left as its deadline, so one that waited (a rate limiter,
// a pause) cannot land after it.
func FenceLeft(renewed, now Instant, renewDeadline time.Duration) time.Duration {
	if renewed.Mono.IsZero() {
		return 0
	}
	since := renewed.since(now)
	if since < 0 || since >= renewDeadline {
		return 0
	}
	return renewDeadline - since
}

// Owns is the fence of every write a holder makes for a bucket's
// revisions: FenceLeft is positive.
func Owns(renewed, now Instant, renewDeadline time.Duration) bool {
	return FenceLeft(renewed, now, renewDeadline) > 0
}
