package breaker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// ErrQueueFull is returned by Reserve when Capacity requests run and
// QueueDepth more already wait.
var ErrQueueFull = errors.New("breaker: pending request queue full")

// MaxSlots bounds Capacity and Capacity+QueueDepth (each count is a 21-bit
// field of the packed state).
const MaxSlots = 1<<fieldBits - 1

// Params sizes a Breaker.
type Params struct {
	// capacity is the number of requests allowed to run at once (> 0).
	Capacity int
	// QueueDepth is the number of requests allowed to wait for a slot (>= 0).
	QueueDepth int
}

// Breaker admits at most Capacity holders at once and queues up to
// QueueDepth more in FIFO order; beyond that Reserve fails at once.
//
// Concurrency design. The semaphore's state is one atomic word packing
// (inFlight, waiters, capacity). While nobody waits, Reserve and Release are
// a single compare-and-swap each and take no lock. Once someone waits, every
// transition goes through mu, which also owns the FIFO list; a Release then
// hands its slot straight to the oldest waiter (inFlight is unchanged), so a
// newcomer can never overtake the queue. The invariant that makes the fast
// path safe: the waiters field equals the list's length and changes only
// under mu, and the fast path runs only while it is zero.
type Breaker struct {
	pending    atomic.Int64 // holders + waiters; bounded by maxPending
	maxPending int64        // Capacity + QueueDepth; immutable

	state atomic.Uint64 // packed (inFlight, waiters, capacity); see pack

	mu   sync.Mutex // owns the list and serialises state changes while waiters > 0
	head *waiter    // oldest waiter
	tail *waiter    // newest waiter
}

// waiter is one queued Reserve. ch receives exactly one token, the slot.
type waiter struct {
	ch         chan struct{}
	prev, next *waiter
	queued     bool // in the list; guarded by Breaker.mu
}

var waiterPool = sync.Pool{New: func() any { return &waiter{ch: make(chan struct{}, 1)} }}

// New returns a Breaker, or an error naming the bad parameter.
func New(p Params) (*Breaker, error) {
	switch {
	case p.Capacity <= 0 || p.Capacity > MaxSlots:
		return nil, fmt.Errorf("breaker: capacity %d must be within [1, %d]", p.Capacity, MaxSlots)
	case p.QueueDepth < 0 || p.Capacity+p.QueueDepth > MaxSlots:
		return nil, fmt.Errorf("breaker: queue depth %d must be within [0, %d]", p.QueueDepth, MaxSlots-p.Capacity)
	}
	b := &Breaker{maxPending: int64(p.Capacity + p.QueueDepth)}
	b.state.Store(pack(0, 0, uint64(p.Capacity)))
	return b, nil
}

// Reserve takes a slot, waiting in FIFO order while all are busy. It returns
// ErrQueueFull at once when the queue is full, or ctx.Err() if ctx ends
// first. ctx.Done is called only when the request has to wait, so a context
// that creates its channel lazily costs nothing on the fast path. After a
// nil error the caller must call Release exactly once.
func (b *Breaker) Reserve(ctx context.Context) error {
	if b.pending.Add(1) > b.maxPending {
		b.pending.Add(-1)
		return ErrQueueFull
	}
	if b.tryAcquire() {
		return nil
	}
	if err := b.wait(ctx); err != nil {
		b.pending.Add(-1)
		return err
	}
	return nil
}

// Release returns a slot taken by Reserve.
func (b *Breaker) Release() {
	b.release()
	b.pending.Add(-1)
}

// InFlight returns the number of slots held.
func (b *Breaker) InFlight() int {
	in, _, _ := unpack(b.state.Load())
	return int(in)
}

// Waiting returns the number of queued requests.
func (b *Breaker) Waiting() int {
	_, w, _ := unpack(b.state.Load())
	return int(w)
}

// capacity returns the current capacity.
func (b *Breaker) capacity() int {
	_, _, c := unpack(b.state.Load())
	return int(c)
}

// Pending returns holders plus waiters.
func (b *Breaker) Pending() int { return int(b.pending.Load()) }

// tryAcquire is the lock-free fast path: take a free slot if nobody waits.
func (b *Breaker) tryAcquire() bool {
	for {
		s := b.state.Load()
		in, w, c := unpack(s)
		if w > 0 || in >= c {
			return false
		}
		if b.state.CompareAndSwap(s, s+inUnit) {
			return true
		}
	}
}

// wait queues the caller and blocks until a slot is handed over or ctx ends.
func (b *Breaker) wait(ctx context.Context) error {
	b.mu.Lock()
	if b.tryAcquire() { // a slot freed up while we took the lock
		b.mu.Unlock()
		return nil
	}
	w := waiterPool.Get().(*waiter)
	b.push(w)
	b.state.Add(waiterUnit) // under mu: the fast paths are now closed
	b.mu.Unlock()

	select {
	case <-w.ch:
		waiterPool.Put(w)
		return nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	if w.queued { // still waiting: leave the queue
		b.remove(w)
		b.state.Add(minusWaiter)
		b.mu.Unlock()
		waiterPool.Put(w)
		return ctx.Err()
	}
	b.mu.Unlock()
	<-w.ch // the slot was handed to us as ctx ended; pass it on
	waiterPool.Put(w)
	b.release()
	return ctx.Err()
}

// release frees one slot, or hands it to the oldest waiter.
func (b *Breaker) release() {
	for { // fast path: nobody waits
		s := b.state.Load()
		if _, w, _ := unpack(s); w > 0 {
			break
		}
		if b.state.CompareAndSwap(s, s-inUnit) {
			return
		}
	}
	b.mu.Lock()
	if b.head == nil { // the waiters left (cancelled) before we got the lock
		b.state.Add(minusIn)
		b.mu.Unlock()
		return
	}
	in, _, c := unpack(b.state.Load())
	if in > c { // capacity shrank: drop the slot instead of handing it over
		b.state.Add(minusIn)
		b.mu.Unlock()
		return
	}
	w := b.head
	b.remove(w)
	b.state.Add(minusWaiter) // the slot changes hands; inFlight is unchanged
	b.mu.Unlock()
	w.ch <- struct{}{} // buffered: never blocks
}

// setCapacity changes the number of slots (the activator follows the
// replica count with it). Growing hands the new slots to waiters at once;
// shrinking takes effect as holders release.
func (b *Breaker) setCapacity(n int) error {
	if n <= 0 || int64(n) > b.maxPending {
		return fmt.Errorf("breaker: capacity %d must be within [1, %d]", n, b.maxPending)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		s := b.state.Load()
		in, w, _ := unpack(s)
		if b.state.CompareAndSwap(s, pack(in, w, uint64(n))) {
			break
		}
	}
	for b.head != nil {
		in, _, c := unpack(b.state.Load())
		if in >= c {
			break
		}
		w := b.head
		b.remove(w)
		b.state.Add(inUnit)
		b.state.Add(minusWaiter)
		w.ch <- struct{}{}
	}
	return nil
}

// push appends w to the list. Callers hold mu.
func (b *Breaker) push(w *waiter) {
	w.queued, w.prev, w.next = true, b.tail, nil
	if b.tail == nil {
		b.head = w
	} else {
		b.tail.next = w
	}
	b.tail = w
}

// remove unlinks w. Callers hold mu.
func (b *Breaker) remove(w *waiter) {
	if w.prev == nil {
		b.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		b.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.queued, w.prev, w.next = false, nil, nil
}

// The packed state: three 21-bit unsigned fields.
const (
	fieldBits  = 21
	fieldMask  = 1<<fieldBits - 1
	inUnit     = 1
	waiterUnit = 1 << fieldBits
	// Adding these subtracts one unit (two's complement).
	minusIn     = ^uint64(inUnit - 1)
	minusWaiter = ^uint64(waiterUnit - 1)
)

func pack(in, waiters, capacity uint64) uint64 {
	return in | waiters<<fieldBits | capacity<<(2*fieldBits)
}

func unpack(s uint64) (in, waiters, capacity uint64) {
	return s & fieldMask, s >> fieldBits & fieldMask, s >> (2 * fieldBits) & fieldMask
}
