package breaker

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustNew(t testing.TB, p Params) *Breaker {
	t.Helper()
	b, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// waitFor spins (yielding) until cond holds; the breaker's own state is the
// synchronisation point, so no timing assumption is made.
func waitFor(cond func() bool) {
	for !cond() {
		runtime.Gosched()
	}
}

func TestNewRejects(t *testing.T) {
	tests := []struct {
		name string
		p    Params
	}{
		{name: "zero capacity", p: Params{Capacity: 0, QueueDepth: 1}},
		{name: "negative depth", p: Params{Capacity: 1, QueueDepth: -1}},
		{name: "too many slots", p: Params{Capacity: MaxSlots, QueueDepth: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.p); err == nil {
				t.Errorf("New(%+v) = nil error, want one", tt.p)
			}
		})
	}
}

// TestLimits: Capacity holders, QueueDepth waiters, then ErrQueueFull.
func TestLimits(t *testing.T) {
	tests := []struct {
		name            string
		p               Params
		wantHold, wantQ int
	}{
		{name: "1+0", p: Params{Capacity: 1}, wantHold: 1},
		{name: "1+10", p: Params{Capacity: 1, QueueDepth: 10}, wantHold: 1, wantQ: 10},
		{name: "10+100", p: Params{Capacity: 10, QueueDepth: 100}, wantHold: 10, wantQ: 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mustNew(t, tt.p)
			for i := range tt.wantHold {
				if err := b.Reserve(context.Background()); err != nil {
					t.Fatalf("Reserve %d: %v", i, err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			errs := make(chan error, tt.wantQ)
			for range tt.wantQ {
				wg.Go(func() { errs <- b.Reserve(ctx) })
			}
			waitFor(func() bool { return b.Waiting() == tt.wantQ })
			if err := b.Reserve(context.Background()); !errors.Is(err, ErrQueueFull) {
				t.Errorf("Reserve beyond the queue = %v, want ErrQueueFull", err)
			}
			got := []int{b.InFlight(), b.Waiting(), b.Pending()}
			if diff := cmp.Diff([]int{tt.wantHold, tt.wantQ, tt.wantHold + tt.wantQ}, got); diff != "" {
				t.Errorf("in flight, waiting, pending (-want +got):\n%s", diff)
			}
			cancel()
			wg.Wait()
			close(errs)
			for err := range errs {
				if !errors.Is(err, context.Canceled) {
					t.Errorf("cancelled waiter got %v, want context.Canceled", err)
				}
			}
			for range tt.wantHold {
				b.Release()
			}
			if got := []int{b.InFlight(), b.Waiting(), b.Pending()}; !cmp.Equal([]int{0, 0, 0}, got) {
				t.Errorf("after release: in flight, waiting, pending = %v, want zeros", got)
			}
		})
	}
}

// TestFIFO: waiters get the slot in arrival order, and a newcomer does not
// overtake them.
func TestFIFO(t *testing.T) {
	const n = 8
	b := mustNew(t, Params{Capacity: 1, QueueDepth: n})
	if err := b.Reserve(context.Background()); err != nil {
		t.Fatal(err)
	}
	order := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := b.Reserve(context.Background()); err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			order <- i
		})
		waitFor(func() bool { return b.Waiting() == i+1 })
	}
	var got []int
	for range n {
		b.Release() // hands the slot to the oldest waiter
		if b.tryAcquire() {
			t.Fatal("a newcomer took a slot while others waited")
		}
		got = append(got, <-order)
	}
	b.Release()
	wg.Wait()
	want := []int{0, 1, 2, 3, 4, 5, 6, 7}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("grant order (-want +got):\n%s", diff)
	}
}

// TestCancelMiddle: a cancelled waiter leaves the queue; the others keep
// their order and the slot count stays right.
func TestCancelMiddle(t *testing.T) {
	b := mustNew(t, Params{Capacity: 1, QueueDepth: 3})
	if err := b.Reserve(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctxs := make([]context.CancelFunc, 3)
	results := make([]chan error, 3)
	for i := range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		ctxs[i], results[i] = cancel, make(chan error, 1)
		go func() { results[i] <- b.Reserve(ctx) }()
		waitFor(func() bool { return b.Waiting() == i+1 })
	}
	ctxs[1]()
	if err := <-results[1]; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	b.Release()
	if err := <-results[0]; err != nil {
		t.Fatalf("first waiter: %v", err)
	}
	b.Release()
	if err := <-results[2]; err != nil {
		t.Fatalf("third waiter: %v", err)
	}
	b.Release()
	for _, c := range ctxs {
		c()
	}
	if got := []int{b.InFlight(), b.Waiting(), b.Pending()}; !cmp.Equal([]int{0, 0, 0}, got) {
		t.Errorf("in flight, waiting, pending = %v, want zeros", got)
	}
}

func TestSetCapacity(t *testing.T) {
	b := mustNew(t, Params{Capacity: 1, QueueDepth: 4})
	if err := b.Reserve(context.Background()); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	for i := range 2 {
		go func() { done <- b.Reserve(context.Background()) }()
		waitFor(func() bool { return b.Waiting() == i+1 })
	}
	if err := b.setCapacity(3); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("waiter after growth: %v", err)
		}
	}
	if err := b.setCapacity(1); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		b.Release()
	}
	if got := []int{b.InFlight(), b.capacity()}; !cmp.Equal([]int{0, 1}, got) {
		t.Errorf("in flight, capacity = %v, want [0 1]", got)
	}
	if err := b.setCapacity(0); err == nil {
		t.Error("SetCapacity(0) = nil error, want one")
	}
}

// TestStress checks under -race that holders never exceed capacity while
// goroutines reserve, cancel and release at random.
func TestStress(t *testing.T) {
	const capacity = 3
	b := mustNew(t, Params{Capacity: capacity, QueueDepth: 30})
	var holders, maxHolders atomic.Int64
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 300 {
				ctx, cancel := context.WithCancel(context.Background())
				if (g+i)%7 == 0 {
					cancel()
				}
				if err := b.Reserve(ctx); err == nil {
					h := holders.Add(1)
					for m := maxHolders.Load(); h > m && !maxHolders.CompareAndSwap(m, h); m = maxHolders.Load() {
					}
					runtime.Gosched()
					holders.Add(-1)
					b.Release()
				}
				cancel()
			}
		})
	}
	wg.Wait()
	if m := maxHolders.Load(); m > capacity {
		t.Errorf("max holders = %d, capacity %d", m, capacity)
	}
	if got := []int{b.InFlight(), b.Waiting(), b.Pending()}; !cmp.Equal([]int{0, 0, 0}, got) {
		t.Errorf("in flight, waiting, pending = %v, want zeros", got)
	}
}
