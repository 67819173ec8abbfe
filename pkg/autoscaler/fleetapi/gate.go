package fleetapi

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"ebb.dev/ebb/pkg/autoscaler/bucket"
)

// bucketParam is the query parameter of POST /v1/stats that names the
// bucket of every stat in the report: bucket.Name(prefix, i, n).
const bucketParam = "bucket"

// Gate admits a bucket's reports while this replica holds the bucket.
// Safe for concurrent use.
type Gate struct {
	prefix      string
	n           int
	misdirected prometheus.Counter

	fence atomic.Pointer[func(i int) bool] // SetFence

	mu    sync.Mutex // guards the fields below
	open  []bool
	busy  []int           // reports being taken, per bucket
	drain []chan struct{} // per bucket, when closing with reports busy: closed by the last one
}

// NewGate returns a gate for n buckets named with prefix, all closed; it
// counts the reports it refuses in ebb_autoscaler_stats_misdirected_total
// (reg nil: not counted).
func NewGate(prefix string, n int, reg prometheus.Registerer) *Gate {
	g := &Gate{prefix: prefix, n: n, open: make([]bool, n), busy: make([]int, n), drain: make([]chan struct{}, n),
		misdirected: prometheus.NewCounter(prometheus.CounterOpts{Name: "ebb_autoscaler_stats_misdirected_total",
			Help: "Activator reports refused with 421: their bucket is not held by this replica (the activator sends them to its holder)."})}
	if reg != nil {
		reg.MustRegister(g.misdirected)
	}
	return g
}

// Open admits bucket i's reports.
func (g *Gate) Open(i int) {
	g.mu.Lock()
	g.open[i] = true
	g.mu.Unlock()
}

// Close refuses bucket i's reports from now on and returns once those
// being taken are done (or ctx ends): after it, no report of the bucket
// reaches this replica's revisions.
func (g *Gate) Close(ctx context.Context, i int) {
	g.mu.Lock()
	g.open[i] = false
	var wait chan struct{}
	if g.busy[i] > 0 {
		if g.drain[i] == nil {
			g.drain[i] = make(chan struct{})
		}
		wait = g.drain[i]
	}
	g.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
		}
	}
}

// SetFence sets the check an open bucket's report must pass too:
// fence(i) true while this replica may write for bucket i's revisions
// (leader.Buckets.Owns). A holder that was paused past its renew
// deadline takes no report before it hears of the loss.
func (g *Gate) SetFence(fence func(i int) bool) { g.fence.Store(&fence) }

// admit takes one report of bucket i if it is open; done must be called
// when it is taken.
func (g *Gate) admit(i int) (done func(), ok bool) {
	if f := g.fence.Load(); f != nil && !(*f)(i) {
		return nil, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.open[i] {
		return nil, false
	}
	g.busy[i]++
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.busy[i]--; g.busy[i] == 0 && g.drain[i] != nil {
			close(g.drain[i])
			g.drain[i] = nil
		}
	}, true
}

// Admit implements autoscaler.StatsGate: a report naming a bucket
// (BucketParam) is admitted only while that bucket is open here (and
// the fence passes); any other is refused, to be answered 421. A report
// naming none is admitted: its stats of revisions not decided here are
// rejected one by one (an activator that does not route by bucket).
func (g *Gate) Admit(r *http.Request) (done func(), refusal string) {
	name := r.URL.Query().Get(bucketParam)
	if name == "" {
		return func() {}, ""
	}
	i, n, ok := bucket.Parse(g.prefix, name)
	if !ok || n != g.n {
		g.misdirected.Inc()
		return nil, fmt.Sprintf("bucket %q is not one of this autoscaler's %d buckets (%s): its replicas do not agree on the count; "+
			"send the report again once they do", name, g.n, bucket.Name(g.prefix, 0, g.n))
	}
	done, ok = g.admit(i)
	if !ok {
		g.misdirected.Inc()
		return nil, fmt.Sprintf("bucket %s is not held by this replica: send the report to its holder (its Lease names it)", name)
	}
	return done, ""
}

// handler gates next (the stats endpoint) with Admit, before next reads
// anything: a refusal is answered 421. It checks no credentials; the
// autoscaler's stats endpoint takes the gate itself (SetStatsGate), after
// them.
func (g *Gate) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		done, refusal := g.Admit(r)
		if refusal != "" {
			http.Error(w, refusal, http.StatusMisdirectedRequest)
			return
		}
		defer done()
		next.ServeHTTP(w, r)
	})
}
