package activator

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func testLimits() QueueLimits {
	return QueueLimits{PerRevision: 3, PerRevisionBytes: 100, Total: 5, TotalBytes: 150}
}

func newTestThrottle(global *budget) *throttle {
	if global == nil {
		global = &budget{maxCount: 5, maxBytes: 150}
	}
	return newThrottle(testLimits(), global, time.Now)
}

func replicas(capacity int64, addrs ...string) *replicaSet {
	s := &replicaSet{policy: lbFirstAvailable}
	for _, a := range addrs {
		r := &replica{addr: a}
		r.capacity.Store(capacity)
		s.replicas = append(s.replicas, r)
	}
	return s
}

// waitResult is what a queued request ended with.
type waitResult struct {
	addr string
	err  error
}

// enqueue starts a waiter and returns once it is queued.
func enqueue(t *testing.T, th *throttle, expire chan time.Time, cost int64) <-chan waitResult {
	t.Helper()
	return enqueueWith(t, th, waitArgs{expire: expire, cost: cost})
}

// enqueueWith starts a waiter with args and returns once it is queued (or
// answered without queueing).
func enqueueWith(t *testing.T, th *throttle, args waitArgs) <-chan waitResult {
	t.Helper()
	before := th.waiting.Load()
	out := make(chan waitResult, 1)
	go func() {
		r, err := th.wait(args)
		res := waitResult{err: err}
		if r != nil {
			res.addr = r.addr
		}
		out <- res
	}()
	for th.waiting.Load() == before {
		select {
		case res := <-out:
			out <- res // answered without queueing
			return out
		default:
		}
		runtime.Gosched() // let the goroutine reach the queue
	}
	// The waiter is counted before its own dispatch pass ends; wait for
	// that pass (it holds mu), or a slot freed next could go to the pass
	// with a clock the test has since moved.
	th.mu.Lock()
	th.mu.Unlock()
	return out
}

func TestThrottleFastPath(t *testing.T) {
	th := newTestThrottle(nil)
	if r := th.take(); r != nil {
		t.Fatalf("take with no replicas = %v, want nil", r.addr)
	}
	th.setReplicas(replicas(1, "a", "b"))
	var got []string
	for range 3 {
		if r := th.take(); r != nil {
			got = append(got, r.addr)
		} else {
			got = append(got, "-")
		}
	}
	if diff := cmp.Diff([]string{"a", "b", "-"}, got); diff != "" {
		t.Errorf("takes (-want +got):\n%s", diff)
	}
}

// TestThrottleFIFO: waiters get slots in arrival order as slots free up,
// and a newcomer does not overtake them.
func TestThrottleFIFO(t *testing.T) {
	th := newTestThrottle(nil)
	th.setReplicas(replicas(1, "a"))
	held := th.take()
	never := make(chan time.Time)
	w1 := enqueue(t, th, never, 10)
	w2 := enqueue(t, th, never, 10)
	if r := th.take(); r != nil {
		t.Fatal("take overtook the queue")
	}
	th.release(held)
	if got := <-w1; got.addr != "a" || got.err != nil {
		t.Fatalf("first waiter = %+v, want a slot on a", got)
	}
	select {
	case got := <-w2:
		t.Fatalf("second waiter served early: %+v", got)
	default:
	}
	th.release(held) // the first waiter's slot
	if got := <-w2; got.addr != "a" {
		t.Fatalf("second waiter = %+v, want a slot on a", got)
	}
	if th.waiting.Load() != 0 || th.bytes != 0 || th.global.count.Load() != 0 || th.global.bytes.Load() != 0 {
		t.Errorf("queue not empty: waiting %d bytes %d global %d/%d", th.waiting.Load(), th.bytes, th.global.count.Load(), th.global.bytes.Load())
	}
}

// TestThrottleBounds: each of the four bounds refuses at once.
func TestThrottleBounds(t *testing.T) {
	never := make(chan time.Time)
	tests := []struct {
		name  string
		queue []int64 // costs of requests already waiting (on this throttle)
		other []int64 // costs waiting on another throttle sharing the budget
		cost  int64
		want  queueFullError
	}{
		{name: "revision count", queue: []int64{1, 1, 1}, cost: 1, want: queueFullError{"revision", "requests", 3}},
		{name: "revision bytes", queue: []int64{60}, cost: 41, want: queueFullError{"revision", "bytes", 100}},
		{name: "activator count", queue: []int64{1, 1}, other: []int64{1, 1, 1}, cost: 1, want: queueFullError{"activator", "requests", 5}},
		{name: "activator bytes", queue: []int64{50}, other: []int64{90}, cost: 11, want: queueFullError{"activator", "bytes", 150}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			global := &budget{maxCount: 5, maxBytes: 150}
			th, other := newTestThrottle(global), newTestThrottle(global)
			for _, c := range tt.queue {
				enqueue(t, th, never, c)
			}
			for _, c := range tt.other {
				enqueue(t, other, never, c)
			}
			_, err := th.wait(waitArgs{expire: never, cost: tt.cost})
			var full *queueFullError
			if !errors.As(err, &full) {
				t.Fatalf("wait error = %v, want a QueueFullError", err)
			}
			if diff := cmp.Diff(tt.want, *full); diff != "" {
				t.Errorf("QueueFullError (-want +got):\n%s", diff)
			}
			th.close(errShuttingDown)
			other.close(errShuttingDown)
			if global.count.Load() != 0 || global.bytes.Load() != 0 {
				t.Errorf("budget not refunded: %d requests, %d bytes", global.count.Load(), global.bytes.Load())
			}
		})
	}
}

func TestThrottleTimeout(t *testing.T) {
	th := newTestThrottle(nil)
	expire := make(chan time.Time, 1)
	w := enqueue(t, th, expire, 10)
	expire <- time.Time{}
	if got := <-w; !errors.Is(got.err, errQueueTimeout) {
		t.Fatalf("wait = %+v, want ErrQueueTimeout", got)
	}
	if th.waiting.Load() != 0 || th.bytes != 0 || th.global.count.Load() != 0 {
		t.Errorf("the timed-out waiter is still counted")
	}
	// The queue still works after a timeout.
	th.setReplicas(replicas(1, "a"))
	if r := th.take(); r == nil {
		t.Error("take after a timeout found no slot")
	}
}

func TestThrottleClose(t *testing.T) {
	th := newTestThrottle(nil)
	never := make(chan time.Time)
	w := enqueue(t, th, never, 10)
	th.close(errRevisionGone)
	if got := <-w; !errors.Is(got.err, errRevisionGone) {
		t.Fatalf("queued request = %+v, want ErrRevisionGone", got)
	}
	if _, err := th.wait(waitArgs{expire: never, cost: 1}); !errors.Is(err, errRevisionGone) {
		t.Errorf("wait after close = %v, want ErrRevisionGone", err)
	}
}

// TestThrottleNewReplicaReleasesWaiters: a revision at zero buffers; the
// first replica takes as many as its capacity allows, at once.
func TestThrottleNewReplicaReleasesWaiters(t *testing.T) {
	th := newTestThrottle(nil)
	never := make(chan time.Time)
	ws := []<-chan waitResult{enqueue(t, th, never, 1), enqueue(t, th, never, 1), enqueue(t, th, never, 1)}
	th.setReplicas(replicas(2, "a"))
	for i := range 2 {
		if got := <-ws[i]; got.addr != "a" {
			t.Fatalf("waiter %d = %+v, want a", i, got)
		}
	}
	if th.waiting.Load() != 1 {
		t.Errorf("waiting = %d, want 1 (capacity 2)", th.waiting.Load())
	}
	th.close(errShuttingDown)
	<-ws[2]
}

// TestThrottleConcurrentUpdates hammers take/wait/release while the
// replica set and capacities change underneath (run with -race). The
// invariants: no replica ever holds more than its capacity, every request
// ends, and all counters return to zero.
func TestThrottleConcurrentUpdates(t *testing.T) {
	global := &budget{maxCount: 1 << 20, maxBytes: 1 << 40}
	th := newThrottle(QueueLimits{PerRevision: 1 << 20, PerRevisionBytes: 1 << 40}, global, time.Now)
	pool := replicas(2, "a", "b", "c", "d").replicas
	var over sync.Map
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() { // the control plane: shuffle sets
		for i := 0; ; i++ {
			select {
			case <-stop:
				th.setReplicas(&replicaSet{replicas: pool, policy: LBRoundRobin})
				return
			default:
			}
			n := i % (len(pool) + 1)
			th.setReplicas(&replicaSet{replicas: pool[:n], policy: LoadBalancing(1 + i%3)})
			runtime.Gosched()
		}
	})
	var clients sync.WaitGroup
	never := make(chan time.Time)
	for range 16 {
		clients.Go(func() {
			for range 300 {
				r := th.take()
				if r == nil {
					var err error
					if r, err = th.wait(waitArgs{expire: never, cost: 1}); err != nil {
						t.Errorf("wait: %v", err)
						return
					}
				}
				if n := r.inFlight.Load(); n > r.capacity.Load() {
					over.Store(r.addr, n)
				}
				th.release(r)
			}
		})
	}
	clients.Wait()
	close(stop)
	wg.Wait()
	over.Range(func(k, v any) bool {
		t.Errorf("replica %v held %v requests, capacity 2", k, v)
		return true
	})
	for _, r := range pool {
		if n := r.inFlight.Load(); n != 0 {
			t.Errorf("replica %s in flight = %d after all released", r.addr, n)
		}
	}
	if th.waiting.Load() != 0 || global.count.Load() != 0 || global.bytes.Load() != 0 {
		t.Errorf("queue not drained: waiting %d, global %d/%d", th.waiting.Load(), global.count.Load(), global.bytes.Load())
	}
}

// TestThrottleSkipsHopelessWaiters: once the replicas are known to take
// 1s to answer, a waiter with less than that left before its deadline is
// answered at once with ErrQueueTimeout (when it arrives, or when a slot
// frees up), and its slot goes to the next.
func TestThrottleSkipsHopelessWaiters(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Unix(1000, 0).UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	th := newThrottle(testLimits(), &budget{maxCount: 5, maxBytes: 150}, now)
	th.observe(time.Second)
	th.setReplicas(replicas(1, "a"))
	held := th.take()
	never := make(chan time.Time)
	if _, err := th.wait(waitArgs{expire: never, cost: 1, deadline: now().Add(500 * time.Millisecond)}); !errors.Is(err, errQueueTimeout) {
		t.Errorf("arrival with 0.5s left = %v, want ErrQueueTimeout at once", err)
	}
	soon := enqueueBy(t, th, never, now().Add(1500*time.Millisecond))
	later := enqueueBy(t, th, never, now().Add(5*time.Second))
	clock.Add(int64(time.Second)) // soon has 0.5s left now
	th.release(held)
	if got := <-soon; !errors.Is(got.err, errQueueTimeout) {
		t.Errorf("waiter with 0.5s left = %+v, want ErrQueueTimeout", got)
	}
	if got := <-later; got.addr != "a" {
		t.Errorf("next waiter = %+v, want the slot", got)
	}
	if th.waiting.Load() != 0 || th.global.count.Load() != 0 {
		t.Error("queue not empty")
	}
}

func TestObserve(t *testing.T) {
	th := newThrottle(testLimits(), &budget{}, time.Now)
	th.observe(800 * time.Millisecond)
	for range 100 {
		th.observe(time.Second)
	}
	if got := time.Duration(th.serviceTime.Load()); got < 990*time.Millisecond || got > time.Second {
		t.Errorf("serviceTime = %v, want about 1s", got)
	}
}

// enqueueBy is enqueue with a request deadline.
func enqueueBy(t *testing.T, th *throttle, expire chan time.Time, deadline time.Time) <-chan waitResult {
	t.Helper()
	return enqueueWith(t, th, waitArgs{expire: expire, cost: 1, deadline: deadline})
}

// TestThrottleClientGone: a waiter whose client goes away leaves the
// queue at once with ErrClientGone, its budgets refunded, and the next
// waiter gets the slot it would have had.
func TestThrottleClientGone(t *testing.T) {
	th := newTestThrottle(nil)
	th.setReplicas(replicas(1, "a"))
	held := th.take()
	never := make(chan time.Time)
	gone := make(chan struct{}, 1)
	left := enqueueWith(t, th, waitArgs{expire: never, gone: gone, cost: 30})
	next := enqueue(t, th, never, 20)
	gone <- struct{}{}
	if got := <-left; !errors.Is(got.err, errClientGone) {
		t.Fatalf("waiter whose client left = %+v, want ErrClientGone", got)
	}
	if th.waiting.Load() != 1 || th.bytes != 20 || th.global.count.Load() != 1 || th.global.bytes.Load() != 20 {
		t.Errorf("after the client left: waiting %d, bytes %d, global %d/%d; want only the next waiter (1, 20)",
			th.waiting.Load(), th.bytes, th.global.count.Load(), th.global.bytes.Load())
	}
	th.release(held)
	if got := <-next; got.addr != "a" {
		t.Errorf("next waiter = %+v, want the slot", got)
	}
}

// TestThrottleClientGoneRace: a slot granted at the moment the client
// goes away is given back at once, to the next waiter; no slot leaks and
// no replica goes over its capacity.
func TestThrottleClientGoneRace(t *testing.T) {
	for i := range 200 {
		th := newTestThrottle(nil)
		th.setReplicas(replicas(1, "a"))
		a := th.take()
		never := make(chan time.Time)
		gone := make(chan struct{}, 1)
		left := enqueueWith(t, th, waitArgs{expire: never, gone: gone, cost: 10})
		next := enqueue(t, th, never, 10)
		gone <- struct{}{}
		th.release(a) // grants the slot to the first waiter, racing with its wake-up
		if got := <-left; !errors.Is(got.err, errClientGone) {
			t.Fatalf("round %d: waiter whose client left = %+v, want ErrClientGone", i, got)
		}
		if got := <-next; got.addr != "a" {
			t.Fatalf("round %d: next waiter = %+v, want the slot given back", i, got)
		}
		if n := a.inFlight.Load(); n != 1 {
			t.Fatalf("round %d: replica holds %d requests, want 1 (the next waiter)", i, n)
		}
		if th.waiting.Load() != 0 || th.bytes != 0 || th.global.count.Load() != 0 || th.global.bytes.Load() != 0 {
			t.Fatalf("round %d: queue not empty", i)
		}
		// Granted in the same instant as it queues, the client already gone:
		// wait sees the grant and the wake-up together, in either order.
		th.release(a)
		gone <- struct{}{}
		if r, err := th.wait(waitArgs{expire: never, gone: gone, cost: 10}); !errors.Is(err, errClientGone) || r != nil {
			t.Fatalf("round %d: wait for a gone client = %v, %v; want ErrClientGone", i, r, err)
		}
		if n := a.inFlight.Load(); n != 0 {
			t.Fatalf("round %d: replica holds %d requests after a gone client's grant, want 0", i, n)
		}
	}
}
