package autoscaler

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// barrierPlatform is a fakePlatform whose ReadyPods waits until n calls
// wait at once (or their context ends): closes that wait on the platform
// as scrapes wait on the network.
type barrierPlatform struct {
	*fakePlatform
	n    int32
	in   atomic.Int32
	most atomic.Int32 // the most calls that waited at once
	all  chan struct{}
}

func (p *barrierPlatform) ReadyPods(ctx context.Context, rev RevisionKey) ([]Pod, error) {
	in := p.in.Add(1)
	defer p.in.Add(-1)
	for m := p.most.Load(); in > m && !p.most.CompareAndSwap(m, in); m = p.most.Load() {
	}
	if in == p.n {
		close(p.all)
	}
	select {
	case <-p.all:
	case <-ctx.Done():
	}
	return p.fakePlatform.ReadyPods(ctx, rev)
}

// TestRunQueueWakesWorkersForWaitingJobs: jobs pushed at once whose run
// waits (a close waiting on its platform) run on as many workers at once
// as there are jobs, up to the pool.
func TestRunQueueWakesWorkersForWaitingJobs(t *testing.T) {
	p := &barrierPlatform{fakePlatform: &fakePlatform{pods: map[RevisionKey][]Pod{}}, n: workers, all: make(chan struct{})}
	a := New(Options{Platform: p, Scraper: &fakeScraper{}, Clock: &fakeClock{now: time.Unix(t0, 0)}})
	var js []job
	for i := range workers {
		key := RevisionKey{Namespace: "ns", Name: "rev-" + strconv.Itoa(i)}
		if err := a.Upsert(key, nil); err != nil {
			t.Fatal(err)
		}
		js = append(js, job{r: a.revisions[key], ev: evClose, sec: t0, at: time.Unix(t0+1, 0).UnixNano()})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a guard against a hang, not a wait
	defer cancel()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { a.deps.queue.work(ctx) })
	}
	a.deps.queue.pushJobs(js...)
	select {
	case <-p.all:
	case <-ctx.Done():
	}
	cancel()
	wg.Wait()
	if got := p.most.Load(); got != workers {
		t.Errorf("at most %d of %d closes waited at once, want all: the workers did not all wake", got, workers)
	}
}
