// Package fleetsim is a deterministic model of the autoscaler fleet on a
// virtual clock, for checking the bucket protocol (package bucket, used
// alike by pkg/platform/kubernetes/leader and activatorsource) under
// faults: N replicas hold bucket Leases on a model API server with
// compare-and-swap writes and delayed, stallable watches; activators
// route reports by what they see; a schedule pauses, kills, restarts,
// cuts off and skews replicas, scales the fleet and changes --buckets.
// At every tick it checks that at most one replica may write for each
// revision (bucket.Owns on its clock), how long a revision went without
// one, and that every report taken was taken once, by that writer.
//
// It is pure: the standard library and package bucket, one seeded
// math/rand/v2 source, no clock, no goroutine.
package fleetsim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"time"

	"ebb.dev/ebb/pkg/autoscaler/bucket"
)

// Config is the fleet's timing, as the autoscaler's flags set it.
type Config struct {
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// PodStart is how long a new pod takes to start.
	PodStart time.Duration
	// Skew is the largest clock rate difference of a replica (0.01: its
	// second lasts 0.99 to 1.01 true seconds).
	Skew float64
	// Tick is the step of the virtual clock.
	Tick time.Duration
	// Revisions is the number of revisions checked.
	Revisions int
	// FailRate is the chance that one API call fails (half of those fail
	// after the write landed, as a timeout does).
	FailRate float64
	// WatchDelay bounds the delay of a watch event.
	WatchDelay time.Duration
}

// DefaultConfig is the autoscaler's defaults (15s, 10s, 2s).
func DefaultConfig() Config {
	return Config{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		PodStart: 5 * time.Second, Skew: 0.01, Tick: 100 * time.Millisecond, Revisions: 64, FailRate: 0.02,
		WatchDelay: 300 * time.Millisecond}
}

// Bound is the longest a revision may go without a writer once the last
// fault is over while some replica runs: the lease duration (as the
// slowest clock measures it), a retry period, one pod start, and one
// watch delay and tick (the model's granularity).
func (c Config) Bound() time.Duration {
	return c.LeaseDuration + time.Duration(float64(c.LeaseDuration)*c.Skew) + c.RetryPeriod + c.PodStart + c.WatchDelay + c.Tick
}

// object is a Lease on the model API server.
type object struct {
	name    string
	rv      int64
	holder  string
	replica bool // a replica's Lease (count is its --buckets); else a bucket's
	index   int
	count   int
}

// event is a watch event: the object as written, or its deletion.
type event struct {
	at      time.Duration
	obj     object
	deleted bool
}

type watcher struct {
	queue        []event
	stalledUntil time.Duration
}

// seen is an object as one observer last saw it, and when (its clock) it
// last changed.
type seen struct {
	obj     object
	changed time.Duration
	first   time.Duration // when first seen
}

type procState int

const (
	running procState = iota
	paused
	dead
)

// term is a replica's hold on one bucket.
type term struct {
	rv        int64
	renewed   time.Duration // local: when the last successful write of it began
	releasing bool
}

// replica is one autoscaler process.
type replica struct {
	id, pod   string
	count     int
	state     procState
	rate      float64 // its clock runs this fast
	resumeAt  time.Duration
	apiDownTo time.Duration
	w         *watcher
	obs       map[string]seen
	terms     map[int]*term
	freeSince []time.Time
	nextRenew time.Duration // local
	replicaRV int64
	backoff   time.Duration // local: no take before it (after a yield)
	base      time.Duration // true time its clock started at
	owned     []bool        // ownsNow's, at ownsAt
	ownsAt    time.Duration
}

func (r *replica) local(now time.Duration) time.Duration {
	return time.Duration(float64(now-r.base) * r.rate)
}

// activator routes reports.
type activator struct {
	w    *watcher
	obs  map[string]seen
	rate float64
	held map[int]time.Duration // revision -> since when its report waits
}

// Sim is one run.
type Sim struct {
	C   Config
	rng *rand.Rand
	now time.Duration

	objs map[string]object
	rv   int64

	replicas []*replica
	acts     []*activator
	revs     []string
	pods     int

	lastOwned []time.Duration // per revision: when it last had a writer
	actions   []action        // scheduled, by time
	ofCache   map[int][]int
	faultEnd  time.Duration // when the last fault ends: spans count from it
	// Stats of the run.
	LongestUndecided time.Duration
	LongestReport    time.Duration
	Taken            int
	Violations       []string
	Trace            bool
	// Legacy runs the rules of the fleet before issue 33 (a replica that
	// sees another count takes nothing; no confirming read; a renewal
	// after a pause restores the hold; writes check no ownership;
	// activators route by the count most Leases vote for), to show the
	// regression schedules failing without the fix.
	Legacy     bool
	ownedBy    []string        // per revision: its writer at the last check
	ownedSince []time.Duration // per revision: since when
	Log        []string
}

// New starts an empty fleet at true time 0.
func New(c Config, seed uint64) *Sim {
	s := &Sim{C: c, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), objs: map[string]object{}, ofCache: map[int][]int{}}
	for i := range c.Revisions {
		s.revs = append(s.revs, "ns-"+strconv.Itoa(i%7)+"/rev-"+strconv.Itoa(i))
	}
	s.lastOwned = make([]time.Duration, c.Revisions)
	s.ownedBy, s.ownedSince = make([]string, c.Revisions), make([]time.Duration, c.Revisions)
	return s
}

// Now is the true time.
func (s *Sim) Now() time.Duration { return s.now }

const prefix = "ebb-autoscaler"

func (s *Sim) logf(format string, args ...any) {
	if s.Trace {
		s.Log = append(s.Log, fmt.Sprintf("%8v ", s.now)+fmt.Sprintf(format, args...))
	}
}

func (s *Sim) fail(format string, args ...any) {
	if len(s.Violations) < 20 {
		s.Violations = append(s.Violations, fmt.Sprintf("at %v: ", s.now)+fmt.Sprintf(format, args...))
	}
}

// --- the model API server ---

func (s *Sim) write(o object, deleted bool) object {
	s.rv++
	if !deleted {
		o.rv = s.rv
		s.objs[o.name] = o
	} else {
		delete(s.objs, o.name)
	}
	for _, w := range s.watchers() {
		at := s.now + time.Duration(s.rng.Int64N(int64(s.C.WatchDelay)+1))
		if n := len(w.queue); n > 0 && w.queue[n-1].at > at {
			at = w.queue[n-1].at // a watch is in order
		}
		w.queue = append(w.queue, event{at: at, obj: o, deleted: deleted})
	}
	return o
}

func (s *Sim) watchers() []*watcher {
	var ws []*watcher
	for _, r := range s.replicas {
		if r.state != dead {
			ws = append(ws, r.w)
		}
	}
	for _, a := range s.acts {
		ws = append(ws, a.w)
	}
	return ws
}

type apiErr int

const (
	ok apiErr = iota
	failed
	conflict
	notFound
)

// call decides whether r's API call goes through: failed (not landed),
// landed but answered failed, or fine.
func (s *Sim) call(r *replica) (lands, answered bool) {
	if s.now < r.apiDownTo {
		return false, false
	}
	if s.rng.Float64() < s.C.FailRate {
		return s.rng.IntN(2) == 0, false
	}
	return true, true
}

// cas writes o if the stored object has resourceVersion rv (0: create).
func (s *Sim) cas(r *replica, o object, rv int64) (object, apiErr) {
	lands, answered := s.call(r)
	if !lands {
		return object{}, failed
	}
	cur, exists := s.objs[o.name]
	switch {
	case rv == 0 && exists:
		return object{}, conflict
	case rv != 0 && !exists:
		return object{}, notFound
	case rv != 0 && cur.rv != rv:
		return object{}, conflict
	}
	got := s.write(o, false)
	if !answered {
		return object{}, failed
	}
	return got, ok
}

func (s *Sim) del(r *replica, name string, rv int64) {
	if lands, _ := s.call(r); !lands {
		return
	}
	if cur, exists := s.objs[name]; exists && cur.rv == rv {
		s.write(cur, true)
	}
}

// --- observers ---

func (s *Sim) deliver(w *watcher, obs map[string]seen, local time.Duration) bool {
	if s.now < w.stalledUntil {
		return false
	}
	n := 0
	for n < len(w.queue) && w.queue[n].at <= s.now {
		e := w.queue[n]
		observe(obs, e.obj, e.deleted, local)
		n++
	}
	w.queue = w.queue[n:]
	return n > 0
}

// observe is leader's observe: a change of record restarts the clock.
func observe(obs map[string]seen, o object, deleted bool, local time.Duration) {
	prev, had := obs[o.name]
	switch {
	case deleted:
		delete(obs, o.name)
	case !had:
		obs[o.name] = seen{obj: o, changed: local, first: local}
	case prev.obj.rv != o.rv: // every write renews or moves it
		obs[o.name] = seen{obj: o, changed: local, first: prev.first}
	}
}

func (s *Sim) live(o seen, local time.Duration) bool {
	return o.obj.holder != "" && local-o.changed < s.C.LeaseDuration
}

func (s *Sim) leasesOf(obs map[string]seen, local time.Duration) (rs []bucket.Replica, ls []bucket.Lease) {
	for _, o := range obs {
		if o.obj.replica {
			if s.live(o, local) {
				rs = append(rs, bucket.Replica{Identity: o.obj.holder, Count: o.obj.count, Young: local-o.first < s.C.LeaseDuration})
			}
			continue
		}
		ls = append(ls, bucket.Lease{Index: o.obj.index, Count: o.obj.count, Holder: o.obj.holder, Live: s.live(o, local)})
	}
	return rs, ls
}

// --- replicas ---

// Start starts a replica pod with count buckets (its identity is the pod
// name; same names a restart in place).
func (s *Sim) Start(pod string, count int) {
	r := &replica{id: pod, pod: pod, count: count, rate: 1 + (s.rng.Float64()*2-1)*s.C.Skew, w: &watcher{},
		obs: map[string]seen{}, terms: map[int]*term{}, freeSince: make([]time.Time, count), base: s.now}
	for _, o := range s.objs { // the informer's first List
		observe(r.obs, o, false, 0)
	}
	s.replicas = append(s.replicas, r)
	s.logf("start %s count %d", pod, count)
}

// NewPod names a new pod.
func (s *Sim) NewPod() string {
	s.pods++
	return "pod-" + strconv.Itoa(s.pods)
}

func (s *Sim) find(pod string) *replica {
	for _, r := range s.replicas {
		if r.pod == pod && r.state != dead {
			return r
		}
	}
	return nil
}

// Live are the pods of replicas not dead.
func (s *Sim) Live() []string {
	var out []string
	for _, r := range s.replicas {
		if r.state != dead {
			out = append(out, r.pod)
		}
	}
	return out
}

// CountOf is a live pod's bucket count.
func (s *Sim) CountOf(pod string) int {
	if r := s.find(pod); r != nil {
		return r.count
	}
	return 0
}

// fault notes a fault that lasts d from now.
func (s *Sim) fault(d time.Duration) { s.faultEnd = max(s.faultEnd, s.now+d) }

// Pause freezes a replica (SIGSTOP) for d.
func (s *Sim) Pause(pod string, d time.Duration) {
	if r := s.find(pod); r != nil && r.state == running {
		r.state, r.resumeAt = paused, s.now+d
		s.fault(d)
		s.logf("pause %s for %v", pod, d)
	}
}

// Kill ends a replica at once (SIGKILL): its Leases stay.
func (s *Sim) Kill(pod string) {
	if r := s.find(pod); r != nil {
		r.state = dead
		s.fault(0)
		s.logf("kill %s", pod)
	}
}

// Stop ends a replica as SIGTERM does: each held bucket is let go, then
// its replica Lease removed (calls that fail leave Leases to lapse).
func (s *Sim) Stop(pod string) {
	r := s.find(pod)
	if r == nil {
		return
	}
	if r.state == paused {
		s.Kill(pod)
		return
	}
	for _, i := range sortedKeys(r.terms) {
		s.release(r, i)
	}
	s.del(r, prefix+"-replica-"+r.id, r.replicaRV)
	r.state = dead
	s.fault(0)
	s.logf("stop %s", pod)
}

// CutOff makes a replica's API calls fail for d.
func (s *Sim) CutOff(pod string, d time.Duration) {
	if r := s.find(pod); r != nil {
		r.apiDownTo = s.now + d
		s.fault(d)
	}
}

// Stall holds a replica's watch events back for d.
func (s *Sim) Stall(pod string, d time.Duration) {
	if r := s.find(pod); r != nil {
		r.w.stalledUntil = s.now + d
		s.fault(d)
	}
}

// StallActivator holds activator k's watch events back for d.
func (s *Sim) StallActivator(k int, d time.Duration) {
	if k < len(s.acts) {
		s.acts[k].w.stalledUntil = s.now + d
	}
}

// AddActivator adds an activator routing reports for every revision.
func (s *Sim) AddActivator() {
	a := &activator{w: &watcher{}, obs: map[string]seen{}, rate: 1 + (s.rng.Float64()*2-1)*s.C.Skew, held: map[int]time.Duration{}}
	for _, o := range s.objs {
		observe(a.obs, o, false, 0)
	}
	s.acts = append(s.acts, a)
}

func sortedKeys(m map[int]*term) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	return ks
}

// owns: r may write for bucket i now (the fence).
func (s *Sim) owns(r *replica, i int) bool {
	t := r.terms[i]
	if r.state == dead || t == nil || t.releasing {
		return false
	}
	if s.Legacy {
		return true // writes checked no ownership
	}
	return bucket.Owns(bucket.At(time.Time{}.Add(time.Hour+t.renewed)), bucket.At(time.Time{}.Add(time.Hour+r.local(s.now))), s.C.RenewDeadline)
}

func (s *Sim) stepReplica(r *replica) {
	if r.state == paused && s.now >= r.resumeAt {
		r.state = running
		s.logf("resume %s", r.pod)
	}
	if r.state != running {
		return
	}
	local := r.local(s.now)
	woke := s.deliver(r.w, r.obs, local)
	if local >= r.nextRenew {
		r.nextRenew = local + s.C.RetryPeriod
		s.renewAll(r)
		woke = true
	}
	if woke {
		s.decide(r)
	}
}

func (s *Sim) renewAll(r *replica) {
	local := r.local(s.now)
	name := prefix + "-replica-" + r.id
	o := object{name: name, holder: r.id, replica: true, count: r.count}
	cur, exists := s.objs[name]
	rv := r.replicaRV
	if rv == 0 && exists {
		rv = cur.rv // a restart in place: read it first
	}
	if got, e := s.cas(r, o, rv); e == ok {
		r.replicaRV = got.rv
	} else {
		r.replicaRV = 0
		if c, ex := s.objs[name]; ex {
			r.replicaRV = c.rv
		}
	}
	for _, i := range sortedKeys(r.terms) {
		t := r.terms[i]
		if t.releasing {
			continue
		}
		if !s.Legacy && local-t.renewed >= s.C.RenewDeadline {
			s.lose(r, i, "not renewed within the renew deadline")
			continue
		}
		name := bucket.Name(prefix, i, r.count)
		got, e := s.cas(r, object{name: name, holder: r.id, index: i, count: r.count}, t.rv)
		if e == conflict {
			if cur, ex := s.objs[name]; ex && cur.holder == r.id {
				got, e = s.cas(r, object{name: name, holder: r.id, index: i, count: r.count}, cur.rv)
			} else {
				s.lose(r, i, "another replica holds it")
				continue
			}
		}
		switch e {
		case ok:
			t.rv, t.renewed = got.rv, local
		case notFound:
			s.lose(r, i, "its Lease was removed")
		}
	}
}

func (s *Sim) lose(r *replica, i int, why string) {
	delete(r.terms, i)
	s.logf("%s lost %d/%d: %s", r.pod, i, r.count, why)
}

func (s *Sim) release(r *replica, i int) {
	t := r.terms[i]
	if t == nil {
		return
	}
	t.releasing = true // the Holder's Lose first: no write for it after this
	s.cas(r, object{name: bucket.Name(prefix, i, r.count), holder: "", index: i, count: r.count}, t.rv)
	delete(r.terms, i)
	s.logf("%s released %d/%d", r.pod, i, r.count)
}

func (s *Sim) decide(r *replica) {
	local := r.local(s.now)
	if local < s.C.RetryPeriod {
		return // at start: the others' Leases may not be seen yet
	}
	if s.Legacy {
		s.legacyDecide(r, local)
		return
	}
	rs, ls := s.leasesOf(r.obs, local)
	held, rel := make([]bool, r.count), make([]bool, r.count)
	for i, t := range r.terms {
		held[i], rel[i] = !t.releasing, t.releasing
	}
	st := bucket.Decide(bucket.View{Self: r.id, Count: r.count, Young: local < s.C.LeaseDuration, Replicas: rs, Leases: ls, Held: held, Releasing: rel,
		FreeSince: r.freeSince, Now: time.Time{}.Add(time.Hour + local), LeaseDuration: s.C.LeaseDuration})
	r.freeSince = st.FreeSince
	for _, l := range st.Sweep {
		name := bucket.Name(prefix, l.Index, l.Count)
		s.del(r, name, r.obs[name].obj.rv)
	}
	if local >= r.backoff {
		for _, i := range st.Take {
			s.acquire(r, i)
		}
	}
	if st.Give >= 0 {
		s.release(r, st.Give)
	}
	for _, i := range st.Yield {
		s.release(r, i)
	}
}

func (s *Sim) acquire(r *replica, i int) {
	if r.terms[i] != nil {
		return
	}
	local := r.local(s.now)
	name := bucket.Name(prefix, i, r.count)
	o, had := r.obs[name]
	if had && s.live(o, local) && o.obj.holder != r.id {
		return
	}
	var rv int64
	if had {
		rv = o.obj.rv
	}
	got, e := s.cas(r, object{name: name, holder: r.id, index: i, count: r.count}, rv)
	if e != ok {
		return
	}
	observe(r.obs, got, false, local)
	if s.Legacy {
		r.terms[i] = &term{rv: got.rv, renewed: local}
		return
	}
	// Confirm: a fresh List; a Lease whose record differs from the one
	// seen changed just now.
	if lands, answered := s.call(r); !lands || !answered {
		s.cas(r, object{name: name, holder: "", index: i, count: r.count}, got.rv)
		return
	}
	for _, cur := range s.objs {
		if prev, seen := r.obs[cur.name]; !seen || prev.obj.rv != cur.rv {
			observe(r.obs, cur, false, local)
		}
	}
	_, ls := s.leasesOf(r.obs, local)
	if bucket.Conflict(i, r.count, ls) {
		s.cas(r, object{name: name, holder: "", index: i, count: r.count}, got.rv)
		r.backoff = local + s.C.RetryPeriod + time.Duration(s.rng.Int64N(int64(2*s.C.RetryPeriod)))
		s.logf("%s yielded %d/%d: another count's live Lease overlaps", r.pod, i, r.count)
		return
	}
	r.terms[i] = &term{rv: got.rv, renewed: local}
	s.logf("%s took %d/%d", r.pod, i, r.count)
}

// --- activators ---

type actRoutes struct {
	s      *Sim
	a      *activator
	local  time.Duration
	counts []int
}

func countsOf(obs map[string]seen) []int {
	var cs []int
	for _, o := range obs {
		if !o.obj.replica && !slices.Contains(cs, o.obj.count) {
			cs = append(cs, o.obj.count)
		}
	}
	slices.Sort(cs)
	slices.Reverse(cs)
	return cs
}

func (v *actRoutes) Counts() []int { return v.counts }

func (v *actRoutes) Holder(i, n int) (string, bool) {
	o, ok := v.a.obs[bucket.Name(prefix, i, n)]
	if !ok {
		return "", false
	}
	return o.obj.holder, v.s.live(o, v.local)
}

func (v *actRoutes) Member(id string, n int) bool {
	o, ok := v.a.obs[prefix+"-replica-"+id]
	return ok && o.obj.count == n && v.s.live(o, v.local)
}

func (s *Sim) stepActivator(a *activator) {
	local := time.Duration(float64(s.now) * a.rate)
	s.deliver(a.w, a.obs, local)
	if s.now%time.Second != 0 {
		return
	}
	view := &actRoutes{s: s, a: a, local: local, counts: countsOf(a.obs)}
	for k, rev := range s.revs {
		since, waiting := a.held[k]
		if !waiting {
			since = s.now
		}
		var i, n int
		var h string
		var routed bool
		if s.Legacy {
			i, n, h, routed = legacyRoute(rev, a)
		} else {
			i, n, h, routed = bucket.Route(rev, view)
		}
		r := s.find(h)
		if routed && r != nil && r.state == running && r.count == n && s.owns(r, i) {
			if n, w := s.writerCount(k); n != 1 || w != r {
				s.fail("report of %s taken by %s, its writers are %v", rev, r.pod, s.names(k, s.writers(k)))
			}
			s.Taken++
			if w := s.now - since; w > s.LongestReport {
				s.LongestReport = w
			}
			delete(a.held, k)
			continue
		}
		a.held[k] = since
		from := max(since, a.w.stalledUntil)
		if s.ownedBy[k] != "" {
			from = max(from, s.ownedSince[k])
		}
		if s.ownedBy[k] != "" && s.now-from > s.C.LeaseDuration+2*time.Second {
			s.fail("the report of %s waits since %v though %s decides it since %v", rev, since, s.ownedBy[k], s.ownedSince[k])
		}
	}
}

// --- the run ---

// Step advances the clock by one tick: watches deliver, replicas renew
// and decide, activators report, then the invariants are checked.
func (s *Sim) Step() {
	s.now += s.C.Tick
	for len(s.actions) > 0 && s.actions[0].at <= s.now {
		a := s.actions[0]
		s.actions = s.actions[1:]
		a.do()
	}
	for _, r := range s.replicas {
		s.stepReplica(r)
	}
	for _, a := range s.acts {
		s.stepActivator(a)
	}
	s.check()
}

type action struct {
	at time.Duration
	do func()
}

// At schedules do at true time t (in order of t, then of scheduling).
func (s *Sim) At(t time.Duration, do func()) {
	k := sort.Search(len(s.actions), func(k int) bool { return s.actions[k].at > t })
	s.actions = slices.Insert(s.actions, k, action{at: t, do: do})
}

// Run steps until true time t.
func (s *Sim) Run(t time.Duration) {
	for s.now < t {
		s.Step()
	}
}

// check: at most one writer per revision; how long each went without.
func (s *Sim) check() {
	anyRunning := false
	for _, r := range s.replicas {
		anyRunning = anyRunning || r.state == running && s.now >= r.apiDownTo && s.now >= r.w.stalledUntil
	}
	for k, rev := range s.revs {
		n, first := s.writerCount(k)
		if n > 1 {
			s.fail("revision %s has %d writers: %v", rev, n, s.names(k, s.writers(k)))
		}
		by := ""
		if n == 1 {
			by = first.pod
		}
		if by != s.ownedBy[k] {
			s.ownedBy[k], s.ownedSince[k] = by, s.now
		}
		if n == 1 || !anyRunning || s.now <= s.faultEnd {
			s.lastOwned[k] = s.now
			continue
		}
		if d := s.now - s.lastOwned[k]; d > s.LongestUndecided {
			s.LongestUndecided = d
			s.logf("%s undecided since %v", rev, s.lastOwned[k])
		}
	}
}

// writers are the replicas that may write for revision k now.
func (s *Sim) writers(k int) []*replica {
	var w []*replica
	for _, r := range s.replicas {
		if r.state != dead && s.ownsNow(r, s.of(k, r.count)) {
			w = append(w, r)
		}
	}
	return w
}

// writerCount is len(writers(k)) and the first, without allocating.
func (s *Sim) writerCount(k int) (n int, first *replica) {
	for _, r := range s.replicas {
		if r.state != dead && s.ownsNow(r, s.of(k, r.count)) {
			if n == 0 {
				first = r
			}
			n++
		}
	}
	return n, first
}

// ownsNow is owns, remembered for the tick.
func (s *Sim) ownsNow(r *replica, i int) bool {
	if r.ownsAt != s.now || len(r.owned) != r.count {
		if len(r.owned) != r.count {
			r.owned = make([]bool, r.count)
		}
		for j := range r.owned {
			r.owned[j] = s.owns(r, j)
		}
		r.ownsAt = s.now
	}
	return r.owned[i]
}

// of is revision k's bucket among n (bucket.Of, remembered).
func (s *Sim) of(k, n int) int {
	c := s.ofCache[n]
	if c == nil {
		c = make([]int, len(s.revs))
		for j, rev := range s.revs {
			c[j] = bucket.Of(rev, n)
		}
		s.ofCache[n] = c
	}
	return c[k]
}

func (s *Sim) names(k int, w []*replica) []string {
	var out []string
	for _, r := range w {
		out = append(out, r.pod+" ("+bucket.Name(prefix, s.of(k, r.count), r.count)+")")
	}
	return out
}

// Err is the run's verdict: its violations, an undecided span past the
// bound, or a report that waited past it.
func (s *Sim) Err() error {
	switch {
	case len(s.Violations) > 0:
		return fmt.Errorf("%d violations, first: %s", len(s.Violations), s.Violations[0])
	case s.LongestUndecided > s.C.Bound():
		return fmt.Errorf("a revision went undecided for %v, past the bound %v", s.LongestUndecided, s.C.Bound())
	}
	return nil
}
