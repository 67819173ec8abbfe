package activator

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"ebb.dev/ebb/pkg/podfailure"
)

// Errors a request gets instead of a replica. A full queue is a
// *QueueFullError.
var (
	errQueueTimeout = errors.New("activator: no replica became available within the queue timeout")
	errRevisionGone = errors.New("activator: the revision was removed while the request waited")
	errShuttingDown = errors.New("activator: shutting down")
	errClientGone   = errors.New("activator: the client went away while the request waited")
)

// revisionFailingError: the revision's pods cannot start
// (Revision.Failure), and it has no usable replica.
type revisionFailingError struct {
	Failure podfailure.Failure
}

func (e *revisionFailingError) Error() string {
	return "activator: the revision's " + e.Failure.Summary() + ": " + e.Failure.Message
}

// queueFullError says which bound refused a request.
type queueFullError struct {
	Scope string // "revision" or "activator"
	Bound string // "requests" or "bytes"
	Limit int64
}

func (e *queueFullError) Error() string {
	return fmt.Sprintf("activator: the %s queue is full (%s limit %d)", e.Scope, e.Bound, e.Limit)
}

// QueueLimits bound the requests waiting for a replica, per revision and
// for the whole activator. Bytes are what waiting requests hold in memory:
// buffered bodies, or the prefetched part of a streamed one.
type QueueLimits struct {
	PerRevision      int64
	PerRevisionBytes int64
	Total            int64
	TotalBytes       int64
}

// budget is the activator-wide count of waiting requests and their bytes.
type budget struct {
	count, bytes       atomic.Int64
	maxCount, maxBytes int64 // immutable
}

func (b *budget) take(cost int64) error {
	if b.count.Add(1) > b.maxCount {
		b.count.Add(-1)
		return &queueFullError{Scope: "activator", Bound: "requests", Limit: b.maxCount}
	}
	if b.bytes.Add(cost) > b.maxBytes {
		b.bytes.Add(-cost)
		b.count.Add(-1)
		return &queueFullError{Scope: "activator", Bound: "bytes", Limit: b.maxBytes}
	}
	return nil
}

func (b *budget) give(cost int64) {
	b.bytes.Add(-cost)
	b.count.Add(-1)
}

// throttle is one revision's gate: it hands out slots on the revision's
// replicas and queues, in FIFO order and within bounds, the requests that
// find none free.
//
// Concurrency design. The replica set is an immutable snapshot behind an
// atomic pointer, and each replica counts its slots atomically, so while
// nobody waits, take is lock-free. mu owns the queue. The invariant that
// prevents lost wake-ups: a waiter is counted in waiting (under mu) before
// its enqueuer tries a last pick, and everyone who frees a slot or adds a
// replica decrements or publishes first and then, if waiting > 0, takes mu
// and dispatches. Sequentially consistent atomics make one of the two see
// the other.
type throttle struct {
	set     atomic.Pointer[replicaSet]
	rr      cursor
	waiting atomic.Int64 // length of the queue; changes only under mu

	limits QueueLimits // PerRevision and PerRevisionBytes used; immutable
	global *budget
	now    func() time.Time // the activator's clock; immutable

	// serviceTime is a moving average of the time replicas take to start
	// answering, in nanoseconds (0: unknown). Dispatch skips a waiter that
	// would not get its answer before its deadline. Updates may race and
	// lose one sample; that is fine for an average.
	serviceTime atomic.Int64

	mu         sync.Mutex // owns head, tail, bytes, closed, failing
	head, tail *waiter
	bytes      int64 // held by waiters of this revision
	closed     error // set once: every later waiter fails with it
	// failing, while set, fails waiters (present and new) whenever the
	// replica set is empty: the revision's pods cannot start.
	failing *revisionFailingError
}

// waiter is one queued request; ch receives exactly one grant.
type waiter struct {
	ch         chan grant
	cost       int64
	deadline   time.Time // the request's; zero: none
	prev, next *waiter
	queued     bool // in the list; guarded by throttle.mu
}

type grant struct {
	r   *replica
	err error
}

var waiterPool = sync.Pool{New: func() any { return &waiter{ch: make(chan grant, 1)} }}

func newThrottle(limits QueueLimits, global *budget, now func() time.Time) *throttle {
	t := &throttle{limits: limits, global: global, now: now}
	t.set.Store(emptySet)
	return t
}

// take is the fast path: a slot now, if nobody waits and one is free.
func (t *throttle) take() *replica {
	if t.waiting.Load() > 0 {
		return nil
	}
	return t.set.Load().pick(&t.rr)
}

// waitArgs are what a request waits with.
type waitArgs struct {
	expire   <-chan time.Time // fires at the queue deadline
	gone     <-chan struct{}  // receives when the client has gone away; nil: never
	cost     int64            // what the request holds in memory while queued
	deadline time.Time        // the request's own; zero: none
}

// wait queues the request until a slot is free, expire fires, the client
// goes away or the throttle closes. A request whose client has gone never
// keeps a slot: one granted as the client left goes back at once, to the
// next waiter.
func (t *throttle) wait(args waitArgs) (*replica, error) {
	w := waiterPool.Get().(*waiter)
	w.cost, w.deadline = args.cost, args.deadline
	t.mu.Lock()
	if err := t.admit(args.cost); err != nil {
		t.mu.Unlock()
		waiterPool.Put(w)
		return nil, err
	}
	t.push(w)
	t.dispatchLocked()
	t.mu.Unlock()

	var g grant
	gone := false
	select {
	case g = <-w.ch:
		select {
		case <-args.gone:
			gone = true
		default:
		}
	case <-args.expire:
		g = t.leave(w, errQueueTimeout)
	case <-args.gone:
		g, gone = t.leave(w, errClientGone), true
	}
	waiterPool.Put(w)
	if !gone {
		return g.r, g.err
	}
	if g.r != nil {
		t.release(g.r)
	}
	return nil, errClientGone
}

// leave takes w out of the queue with err, unless a grant won the race:
// then it returns the grant.
func (t *throttle) leave(w *waiter, err error) grant {
	t.mu.Lock()
	if w.queued {
		t.unlink(w)
		t.mu.Unlock()
		return grant{err: err}
	}
	t.mu.Unlock()
	return <-w.ch // granted at the same moment: exactly one grant is sent
}

// admit checks the bounds and charges the budgets. Callers hold mu.
func (t *throttle) admit(cost int64) error {
	switch {
	case t.closed != nil:
		return t.closed
	case t.failing != nil && len(t.set.Load().replicas) == 0:
		return t.failing
	case t.waiting.Load() >= t.limits.PerRevision:
		return &queueFullError{Scope: "revision", Bound: "requests", Limit: t.limits.PerRevision}
	case t.bytes+cost > t.limits.PerRevisionBytes:
		return &queueFullError{Scope: "revision", Bound: "bytes", Limit: t.limits.PerRevisionBytes}
	}
	if err := t.global.take(cost); err != nil {
		return err
	}
	t.bytes += cost
	return nil
}

// release returns a slot and hands slots to waiters.
func (t *throttle) release(r *replica) {
	r.release()
	t.kick()
}

// kick dispatches waiters if there are any (after a slot was freed, a
// replica added, or a capacity raised).
func (t *throttle) kick() {
	if t.waiting.Load() > 0 {
		t.mu.Lock()
		t.dispatchLocked()
		t.mu.Unlock()
	}
}

// setReplicas publishes a new replica set and dispatches waiters; an
// empty set of a failing revision fails them (setFailing).
func (t *throttle) setReplicas(s *replicaSet) {
	t.set.Store(s)
	if t.waiting.Load() == 0 {
		return
	}
	t.mu.Lock()
	if t.failing != nil && len(s.replicas) == 0 {
		t.failAllLocked(t.failing)
	} else {
		t.dispatchLocked()
	}
	t.mu.Unlock()
}

// close fails every waiter, present and future, with err.
func (t *throttle) close(err error) {
	t.mu.Lock()
	if t.closed == nil {
		t.closed = err
	}
	for t.head != nil {
		w := t.head
		t.unlink(w)
		w.ch <- grant{err: t.closed}
	}
	t.mu.Unlock()
}

// setFailing sets (nil: clears) the revision's failure to start. While
// it is set and no replica is usable, every waiter fails with it, at once;
// a replica that becomes usable serves the waiters again. Checking it
// under mu, as admit does, means no waiter can slip in between.
func (t *throttle) setFailing(err *revisionFailingError) {
	t.mu.Lock()
	t.failing = err
	if err != nil && len(t.set.Load().replicas) == 0 {
		t.failAllLocked(err)
	}
	t.mu.Unlock()
}

// failAllLocked fails every waiter with err. Callers hold mu.
func (t *throttle) failAllLocked(err error) {
	for t.head != nil {
		w := t.head
		t.unlink(w)
		w.ch <- grant{err: err}
	}
}

// dispatchLocked hands free slots to waiters, oldest first. A waiter
// whose deadline is nearer than the replicas' usual time to answer is
// answered at once instead (ErrQueueTimeout): under sustained overload the
// oldest waiters are those about to expire, and giving them the slot would
// only make the replica work for an answer nobody receives. Callers hold
// mu.
func (t *throttle) dispatchLocked() {
	var cutoff time.Time // a waiter must have a deadline after it
	if st := t.serviceTime.Load(); st > 0 && t.head != nil {
		cutoff = t.now().Add(time.Duration(st))
	}
	for t.head != nil {
		w := t.head
		if !cutoff.IsZero() && !w.deadline.IsZero() && w.deadline.Before(cutoff) {
			t.unlink(w)
			w.ch <- grant{err: errQueueTimeout}
			continue
		}
		r := t.set.Load().pick(&t.rr)
		if r == nil {
			return
		}
		t.unlink(w)
		w.ch <- grant{r: r} // buffered: never blocks
	}
}

// observe adds one time-to-answer sample to serviceTime (weight 1/8).
func (t *throttle) observe(d time.Duration) {
	old := t.serviceTime.Load()
	if old == 0 {
		t.serviceTime.Store(int64(d))
		return
	}
	t.serviceTime.Store(old + (int64(d)-old)/8)
}

// push appends w to the queue. Callers hold mu.
func (t *throttle) push(w *waiter) {
	w.queued, w.prev, w.next = true, t.tail, nil
	if t.tail == nil {
		t.head = w
	} else {
		t.tail.next = w
	}
	t.tail = w
	t.waiting.Add(1)
}

// unlink removes w from the queue and refunds its budget. Callers hold mu.
func (t *throttle) unlink(w *waiter) {
	if w.prev == nil {
		t.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		t.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.queued, w.prev, w.next = false, nil, nil
	t.waiting.Add(-1)
	t.bytes -= w.cost
	t.global.give(w.cost)
}
