package autoscaler

import (
	"context"
	"sync"
)

// workers is the size of the pool that runs the revisions: enough to
// overlap scrapes and platform calls that wait on the network, few enough
// that only they hold deep stacks. A revision has no goroutine of its own.
const workers = 64

// job is one item of the run queue: a revision to run (ev 0: a signal set
// its events already), or the schedule's work for it (ev evClose or
// evCheck), which the worker that takes the job hands to the revision
// (revision.take). The schedule's dispatcher never touches a revision:
// at 100,000 revisions each one's memory is cold, and a line written by
// the dispatcher and read at once by a worker on another core is paid for
// twice.
type job struct {
	r   *revision
	ev  uint32
	sec int64 // evClose: the second to close
	at  int64 // evClose: when it was due, unix nanoseconds
}

// runQueue holds the jobs: the revisions that have work (revision.signal
// puts one in at most once at a time) and the schedule's work; the workers
// take them out in order. It is unbounded in code and bounded by the
// revisions in fact (a revision has at most one signal in it, and the
// dispatcher queues no more closes while a second of them waits: hand),
// so that a signal never blocks: Ingest runs on an HTTP handler.
type runQueue struct {
	mu     sync.Mutex // guards items, head and closes
	items  []job
	head   int
	closes int // the evClose jobs in items
	// ready holds a token for each push while some worker may wait; a
	// worker takes one before it looks again.
	ready chan struct{}
}

func newRunQueue() *runQueue {
	return &runQueue{ready: make(chan struct{}, workers)}
}

// push appends a revision to run.
func (q *runQueue) push(r *revision) { q.pushJobs(job{r: r}) }

// pushJobs appends jobs and wakes as many workers.
func (q *runQueue) pushJobs(js ...job) {
	if len(js) == 0 {
		return
	}
	q.mu.Lock()
	q.items = append(q.items, js...)
	for i := range js {
		if js[i].ev == evClose {
			q.closes++
		}
	}
	q.mu.Unlock()
	for range min(len(js), workers) {
		select {
		case q.ready <- struct{}{}:
		default:
			return // every worker has a token already
		}
	}
}

// pop returns the oldest job; ok false when none waits.
func (q *runQueue) pop() (j job, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.items) {
		return job{}, false
	}
	j = q.items[q.head]
	if j.ev == evClose {
		q.closes--
	}
	q.items[q.head] = job{}
	q.head++
	switch {
	case q.head == len(q.items):
		q.items, q.head = q.items[:0], 0
	case q.head > 1024 && q.head*2 > len(q.items):
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	return j, true
}

// closesWaiting is the number of closes queued and not yet taken.
func (q *runQueue) closesWaiting() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closes
}

// work runs jobs until ctx ends; what is left in the queue then is Run's
// to end (shutdown).
func (q *runQueue) work(ctx context.Context) {
	for ctx.Err() == nil {
		j, ok := q.pop()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-q.ready:
			}
			continue
		}
		j.run(ctx)
	}
}

// run does a job: the schedule's work is handed to the revision first,
// which is then run unless another worker runs it or has it queued (that
// one sees the work).
func (j *job) run(ctx context.Context) {
	if j.ev != 0 && !j.r.take(j) {
		return
	}
	j.r.run(ctx)
}
