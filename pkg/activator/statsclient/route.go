package statsclient

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"time"

	"ebb.dev/ebb/pkg/stats"
)

// Router says where reports go when several autoscaler replicas share
// the revisions by bucket (package bucket): the replica that holds a
// revision's bucket takes its reports, and refuses any other bucket's
// with 421 before taking anything. On a cluster the bucket Leases say who
// holds what (activatorsource.Autoscalers).
type Router interface {
	// Route is a revision's bucket (bucket.Name) and the stats address
	// (host:port) of the replica that holds it; addr is "" while none does.
	Route(revision string) (bucketName, addr string)
	// Changed is signalled when a holder may have changed.
	Changed() <-chan struct{}
}

// With a Router every report goes to its bucket's holder, in one POST
// per bucket (POST /v1/stats?bucket=NAME). A report that was not taken,
// or not sent (no holder yet, a refusal, a holder gone), waits, and goes
// again when the holders change or a second later: a report sent while
// a bucket changes hands reaches its next holder. A report whose POST may
// have been taken (no answer once sent) goes again to another replica
// only: the one that may have taken it does not take it twice. Waiting
// reports keep one stat per revision, pod and kind, the newest window and
// the strongest poke (the autoscaler's own rule, stats.Pending), so a
// report resent beside a newer one never counts twice either.

// maxHeldPerBucket bounds the stats waiting for one bucket's holder; the
// newest of each revision and pod replace the older, new ones beyond it
// are dropped (counted).
const maxHeldPerBucket = 4096

// resendEvery is how often waiting reports are tried again when no
// holder changed.
const resendEvery = time.Second

// held are the reports waiting for their bucket's holder. mu guards
// buckets; never held across I/O.
type held struct {
	mu      sync.Mutex
	buckets map[string]map[heldKey]heldStat
}

type heldKey struct {
	revision, pod string
	poke          bool
}

// heldStat is a waiting stat and the replica it must not go to again
// (one that may have taken it); "" for none.
type heldStat struct {
	st    stats.Stat
	avoid string
}

// routed sends a batch by bucket, with whatever waits for the same
// buckets.
func (c *Client) routed(batch []stats.Stat) {
	c.hold(batch, "", "")
	c.flush()
}

// hold makes stats wait. bucketName is theirs when known ("": routed
// one by one).
func (c *Client) hold(batch []stats.Stat, bucketName, avoid string) {
	c.held.mu.Lock()
	defer c.held.mu.Unlock()
	for _, st := range batch {
		b := bucketName
		if b == "" {
			b, _ = c.opts.Router.Route(st.Revision)
		}
		c.putLocked(b, heldKey{revision: st.Revision, pod: st.PodName, poke: st.Period == 0}, heldStat{st: st, avoid: avoid})
	}
}

// putLocked makes one stat wait under bucket b: the newest window and
// the strongest poke of each revision, pod and kind; a new one beyond
// maxHeldPerBucket is dropped (counted). c.held.mu is held.
func (c *Client) putLocked(b string, k heldKey, h heldStat) {
	m := c.held.buckets[b]
	if m == nil {
		m = map[heldKey]heldStat{}
		c.held.buckets[b] = m
	}
	old, ok := m[k]
	switch {
	case !ok && len(m) >= maxHeldPerBucket:
		c.dropped.Add(1)
	case !ok, k.poke && h.st.AverageConcurrency > old.st.AverageConcurrency, !k.poke && !h.st.Time.Before(old.st.Time):
		m[k] = h
	}
}

// flush sends every bucket's waiting stats that have a holder to go to.
func (c *Client) flush() {
	type send struct {
		bucket, addr string
		stats        []stats.Stat
	}
	var sends []send
	c.held.mu.Lock()
	c.rerouteLocked()
	for b, m := range c.held.buckets {
		if b == "" {
			continue // no bucket Lease seen yet: nothing to route by
		}
		var addr string
		for k := range m {
			_, addr = c.opts.Router.Route(k.revision)
			break
		}
		if addr == "" {
			continue
		}
		s := send{bucket: b, addr: addr}
		for k, h := range m {
			if h.avoid != addr {
				s.stats = append(s.stats, h.st)
				delete(m, k)
			}
		}
		if len(m) == 0 {
			delete(c.held.buckets, b)
		}
		if len(s.stats) > 0 {
			sends = append(sends, s)
		}
	}
	c.held.mu.Unlock()
	var wg sync.WaitGroup // the buckets at once: a dead holder's timeout delays no other bucket
	for _, s := range sends {
		wg.Go(func() {
			target := "http://" + s.addr + stats.BatchPath + "?bucket=" + url.QueryEscape(s.bucket)
			out, err := c.send(target, s.stats)
			switch out {
			case notTaken:
				c.hold(s.stats, s.bucket, "")
			case unknown:
				c.hold(s.stats, s.bucket, s.addr)
			case dropped:
				c.dropped.Add(int64(len(s.stats)))
			}
			if err != nil && !errors.Is(err, errMisdirected) { // a holder that just let go: expected, and sent again
				c.failed.Add(1)
				c.warn(err)
			}
		})
	}
	wg.Wait()
}

// rerouteLocked moves every waiting stat to the bucket its revision is
// routed to now: a stat held under a bucket that no longer exists (the
// fleet changed its bucket count) or before any bucket was known goes
// to its revision's bucket, never again under the old name (its holder
// would refuse it, 421, forever). c.held.mu is held.
func (c *Client) rerouteLocked() {
	for b, m := range c.held.buckets {
		for k, h := range m {
			nb, _ := c.opts.Router.Route(k.revision)
			if nb == "" || nb == b {
				continue
			}
			delete(m, k)
			c.putLocked(nb, k, h)
		}
		if len(m) == 0 {
			delete(c.held.buckets, b)
		}
	}
}

// waiting reports whether any stat waits.
func (c *Client) waiting() bool {
	c.held.mu.Lock()
	defer c.held.mu.Unlock()
	return len(c.held.buckets) > 0
}

// resendLoop sends what waits when the holders change, and every
// resendEvery, until ctx ends.
func (c *Client) resendLoop(ctx context.Context) {
	tick := time.NewTicker(resendEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.opts.Router.Changed():
		case <-tick.C:
		}
		if c.waiting() {
			c.flush()
		}
	}
}
