package behavior

import "time"

// queue is a FIFO on a slice that is compacted in place when it is full,
// so that a queue of bounded length stops allocating once it has grown.
type queue[T any] struct {
	items []T
	head  int
}

func (q *queue[T]) live() []T { return q.items[q.head:] }

func (q *queue[T]) push(v T) {
	if q.head > 0 && len(q.items) == cap(q.items) {
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	q.items = append(q.items, v)
}

func (q *queue[T]) popFront() { q.head++ }

func (q *queue[T]) popBack() { q.items = q.items[:len(q.items)-1] }

func (q *queue[T]) empty() bool { return q.head == len(q.items) }

func (q *queue[T]) front() T { return q.items[q.head] }

func (q *queue[T]) back() T { return q.items[len(q.items)-1] }

// recIndex answers "the largest (smallest) recommendation younger than a
// cutoff" in O(log n) for recommendations stored in time order. maxq keeps
// the recommendations no later one is at least as large as (so its values
// decrease from front to back), minq those no later one is at most as
// small as. A window ending now is a suffix of the recommendations, and
// its maximum is the first entry of maxq inside it: an entry outside maxq
// has a later, larger one in the same window. This holds for every window
// length, so one index serves both directions and behavior changes.
type recIndex struct {
	maxq, minq queue[Recommendation]
}

func (x *recIndex) push(r Recommendation) {
	for !x.maxq.empty() && x.maxq.back().Replicas <= r.Replicas {
		x.maxq.popBack()
	}
	x.maxq.push(r)
	for !x.minq.empty() && x.minq.back().Replicas >= r.Replicas {
		x.minq.popBack()
	}
	x.minq.push(r)
}

// dropBefore forgets the recommendations older than cutoff.
func (x *recIndex) dropBefore(cutoff time.Time) {
	for !x.maxq.empty() && x.maxq.front().At.Before(cutoff) {
		x.maxq.popFront()
	}
	for !x.minq.empty() && x.minq.front().At.Before(cutoff) {
		x.minq.popFront()
	}
}

// maxAfter is the largest recommendation after cutoff (at or after it when
// inclusive), and whether there is one.
func (x *recIndex) maxAfter(cutoff time.Time, inclusive bool) (int32, bool) {
	return firstAfter(x.maxq.live(), cutoff, inclusive)
}

// minAfter is the smallest recommendation after cutoff.
func (x *recIndex) minAfter(cutoff time.Time) (int32, bool) {
	return firstAfter(x.minq.live(), cutoff, false)
}

// firstAfter is the first entry of q (sorted by time) after cutoff, or at
// it when inclusive: a binary search.
func firstAfter(q []Recommendation, cutoff time.Time, inclusive bool) (int32, bool) {
	lo, hi := 0, len(q)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if q[mid].At.After(cutoff) || inclusive && q[mid].At.Equal(cutoff) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if lo == len(q) {
		return 0, false
	}
	return q[lo].Replicas, true
}

// clone copies the live items into a queue of its own.
func (q *queue[T]) clone() queue[T] {
	return queue[T]{items: append([]T(nil), q.live()...)}
}
