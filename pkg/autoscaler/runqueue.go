package autoscaler

import (
	"context"
	"sync"
)

// workers is the size of the pool that runs the revisions: enough to
// overlap scrapes and platform calls that wait on the network, few enough
// that only they hold deep stacks. A revision has no goroutine of its own.
const workers = 64

// runQueue holds the revisions that have work (revision.signal puts one
// in at most once at a time); the workers take them out in order. It is
// unbounded in code and bounded by the revisions in fact, so that a
// signal never blocks: Ingest runs on an HTTP handler.
type runQueue struct {
	mu    sync.Mutex // guards items and head
	items []*revision
	head  int
	// ready holds a token for each push while some worker may wait; a
	// worker takes one before it looks again.
	ready chan struct{}
}

func newRunQueue() *runQueue {
	return &runQueue{ready: make(chan struct{}, workers)}
}

// push appends revisions and wakes as many workers.
func (q *runQueue) push(rs ...*revision) {
	if len(rs) == 0 {
		return
	}
	q.mu.Lock()
	q.items = append(q.items, rs...)
	q.mu.Unlock()
	for range min(len(rs), workers) {
		select {
		case q.ready <- struct{}{}:
		default:
			return // every worker has a token already
		}
	}
}

// pop returns the oldest revision, nil when none waits.
func (q *runQueue) pop() *revision {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.items) {
		return nil
	}
	r := q.items[q.head]
	q.items[q.head] = nil
	q.head++
	switch {
	case q.head == len(q.items):
		q.items, q.head = q.items[:0], 0
	case q.head > 1024 && q.head*2 > len(q.items):
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	return r
}

// work runs revisions until ctx ends; what is left in the queue then is
// Run's to end (shutdown).
func (q *runQueue) work(ctx context.Context) {
	for ctx.Err() == nil {
		r := q.pop()
		if r == nil {
			select {
			case <-ctx.Done():
				return
			case <-q.ready:
			}
			continue
		}
		r.run(ctx)
	}
}
