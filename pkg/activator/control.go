package activator

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/podfailure"
	"ebb.dev/ebb/pkg/stats"
)

// routeTable is an immutable snapshot of the revisions, read by every
// request and replaced whole by apply.
type routeTable struct {
	byKey map[string]*revision
}

// revision is one revision as the activator serves it. The object lives
// from the revision's first appearance to its removal; table snapshots
// share it.
type revision struct {
	key string // "namespace/name"; immutable
	ns  string // its namespace; immutable
	cfg atomic.Pointer[revisionConfig]
	// marker is the K-Proxy-Request value sent to its replicas (the plain
	// marker, or "activator " + its namespace's proxy secret:
	// stats.NamespaceProxySecret), and the proof by which they say a
	// request did not reach the app. Replaced whole by SetProxySecret.
	marker   atomic.Pointer[hopMarks]
	throttle *throttle
	acct     *stats.Accounting

	lastPoke atomic.Int64  // Unix nanoseconds of the last poke
	pokes    atomic.Uint64 // pokes sent in the current reporting period
	m        *revMetrics   // its Prometheus series and cold-start clock; immutable pointer

	known map[string]*replicaState // by address; guarded by controlPlane.mu
	// failure is the platform's last Revision.Failure (nil: none);
	// guarded by controlPlane.mu.
	failure *podfailure.Failure
}

// revisionConfig is a revision's settings, replaced whole on change.
type revisionConfig struct {
	timeout      time.Duration
	queueTimeout time.Duration
	cc           int
	activators   int
	index        int           // 1-based position among the activators; 0: unknown
	policy       LoadBalancing // resolved, never LBAuto
}

// replicaState is the control plane's view of one replica the platform
// listed. Guarded by controlPlane.mu.
type replicaState struct {
	addr      string
	usable    *replica           // non-nil when in the revision's set
	stopProbe context.CancelFunc // non-nil while a probe loop runs
}

// controlPlane owns the mutable view of the platform: revisions, their
// replicas and probe loops. apply, probe results and connection failures
// change it under mu and publish immutable snapshots for requests.
type controlPlane struct {
	mu     sync.Mutex           // owns revs, ctx, synced, proxySecret and every revision.known
	revs   map[string]*revision // the current table's map; never mutated once published
	ctx    context.Context      // parent of the probe loops
	probes sync.WaitGroup       // the probe loops
	synced bool                 // the platform has been applied once
	// proxySecret is the install's proxy secret ("": none), from which
	// each revision's marker is made.
	proxySecret string
}

func (c *controlPlane) setContext(ctx context.Context) {
	c.mu.Lock()
	c.ctx = ctx
	c.mu.Unlock()
}

// wait waits for the probe loops (after their context ended).
func (c *controlPlane) wait() { c.probes.Wait() }

// closeAll fails every queued request of every revision with err.
func (c *controlPlane) closeAll(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rev := range c.revs {
		rev.throttle.close(err)
	}
}

// apply makes the platform's list of revisions current: new revisions
// appear, removed ones fail their queued requests, settings and replica
// sets follow. It publishes one new routing table.
func (a *Activator) apply(list []Revision) {
	c := &a.ctl
	c.mu.Lock()
	defer c.mu.Unlock()
	next := make(map[string]*revision, len(list))
	for i := range list {
		r := &list[i]
		if err := r.validate(); err != nil {
			a.log.Warn("ignoring an invalid revision from the platform", zap.Error(err))
			continue
		}
		key := r.Key()
		if next[key] != nil {
			a.log.Warn("ignoring a duplicate revision from the platform", zap.String("revision", key))
			continue
		}
		rev := c.revs[key]
		if rev == nil {
			rev = a.newRevision(key, r.Namespace, config.NamesOf(r.Namespace, r.Name, r.Labels))
			a.log.Info("revision added", zap.String("revision", key))
		}
		a.configure(rev, r)
		next[key] = rev
	}
	for key, rev := range c.revs {
		if next[key] == nil {
			a.retire(rev)
			a.log.Info("revision removed", zap.String("revision", key))
		}
	}
	c.revs = next
	a.routes.Store(&routeTable{byKey: next})
	if !c.synced {
		c.synced = true
		a.ready.Store(!a.stopping.Load())
	}
}

func (a *Activator) newRevision(key, ns string, names config.KnativeNames) *revision {
	rev := &revision{
		key:      key,
		ns:       ns,
		throttle: newThrottle(a.opts.Queue, a.global, a.clock.Now),
		acct:     stats.NewAccounting(a.clock.Now()),
		known:    map[string]*replicaState{},
		m:        a.metrics.revs.forRevision(key, names),
	}
	rev.marker.Store(a.markerFor(ns))
	return rev
}

// configure updates a revision's settings and replicas. Callers hold mu.
func (a *Activator) configure(rev *revision, r *Revision) {
	cfg := &revisionConfig{
		timeout:      r.Timeout,
		queueTimeout: r.QueueTimeout,
		cc:           r.ContainerConcurrency,
		activators:   max(r.Activators, 1),
		index:        r.ActivatorIndex,
		policy:       r.LoadBalancing.resolve(r.ContainerConcurrency),
	}
	if cfg.queueTimeout == 0 {
		cfg.queueTimeout = a.opts.QueueTimeout
	}
	if cfg.queueTimeout == 0 || cfg.queueTimeout > cfg.timeout {
		cfg.queueTimeout = cfg.timeout
	}
	old := rev.cfg.Swap(cfg)
	changed := old == nil || *old != *cfg
	if a.syncReplicas(rev, r.Replicas) || changed {
		a.publish(rev)
	}
	a.setFailure(rev, r.Failure)
}

// setFailure follows the platform's word on whether the revision's pods
// can start. Callers hold mu.
func (a *Activator) setFailure(rev *revision, f *podfailure.Failure) {
	switch {
	case f == nil && rev.failure == nil, f != nil && rev.failure != nil && *f == *rev.failure:
		return
	case f == nil:
		rev.failure = nil
		rev.throttle.setFailing(nil)
		a.log.Info("revision's pods start again", zap.String("revision", rev.key))
		return
	}
	cp := *f
	rev.failure = &cp
	rev.throttle.setFailing(&revisionFailingError{Failure: cp})
	a.log.Warn("revision's pods are failing; while no replica is usable its requests are answered 503 with the cause",
		zap.String("revision", rev.key), zap.String("summary", cp.Summary()), zap.String("reason", cp.Reason), zap.String("cause", cp.Cause),
		zap.String("message", cp.Message))
}

// syncReplicas follows the platform's replica list: new ready replicas
// become usable, new unready ones are probed, vanished ones are dropped.
// It reports whether the usable set changed. Callers hold mu.
func (a *Activator) syncReplicas(rev *revision, list []Replica) bool {
	changed := false
	seen := make(map[string]bool, len(list))
	for _, p := range list {
		if p.Address == "" || seen[p.Address] {
			continue
		}
		seen[p.Address] = true
		if rev.known[p.Address] != nil {
			continue
		}
		st := &replicaState{addr: p.Address}
		rev.known[p.Address] = st
		if p.Ready {
			st.usable = a.newReplica(p.Address)
			changed = true
		} else {
			a.startProbe(rev, st)
		}
	}
	for addr, st := range rev.known {
		if !seen[addr] {
			a.dropReplica(rev, st)
			changed = changed || st.usable != nil
		}
	}
	return changed
}

func (a *Activator) dropReplica(rev *revision, st *replicaState) {
	if st.stopProbe != nil {
		st.stopProbe()
		st.stopProbe = nil
	}
	delete(rev.known, st.addr)
}

func (a *Activator) newReplica(addr string) *replica {
	return &replica{addr: addr, client: a.clients.get(addr)}
}

// publish rebuilds the revision's replica set from the usable replicas:
// this activator's subset of them (subset), each with this activator's
// capacity on it. Callers hold mu.
func (a *Activator) publish(rev *revision) {
	cfg := rev.cfg.Load()
	usable := make([]*replica, 0, len(rev.known))
	for _, st := range rev.known {
		if st.usable != nil {
			usable = append(usable, st.usable)
		}
	}
	slices.SortFunc(usable, func(x, y *replica) int { return strings.Compare(x.addr, y.addr) })
	first, last, extra, capacity := subset(len(usable), cfg.cc, cfg.activators, cfg.index)
	set := &replicaSet{policy: cfg.policy, replicas: usable[first:last:last]}
	if extra >= 0 {
		set.replicas = append(set.replicas, usable[extra])
	}
	for _, r := range set.replicas {
		r.capacity.Store(capacity)
	}
	rev.throttle.setReplicas(set)
}

// retire removes a revision: probes stop, queued requests fail. Requests
// in flight finish on the replicas they hold. Callers hold mu.
func (a *Activator) retire(rev *revision) {
	for _, st := range rev.known {
		a.dropReplica(rev, st)
	}
	rev.throttle.setReplicas(emptySet)
	rev.throttle.close(errRevisionGone)
	a.metrics.revs.forget(rev.key)
}

// current reports whether rev is still in the table. Callers hold mu.
func (c *controlPlane) current(rev *revision) bool { return c.revs[rev.key] == rev }

// markReady makes a probed replica usable.
func (a *Activator) markReady(rev *revision, addr string) {
	c := &a.ctl
	c.mu.Lock()
	defer c.mu.Unlock()
	st := rev.known[addr]
	if !c.current(rev) || st == nil || st.usable != nil {
		return
	}
	st.stopProbe = nil // the loop that called us ends
	st.usable = a.newReplica(addr)
	rev.m.replicaReady(a.clock.Now())
	a.publish(rev)
	a.log.Info("replica ready", zap.String("revision", rev.key), zap.String("address", addr))
}

// markDown takes a replica out of rotation after a connection error and
// probes it again: a replica that went away gets no more traffic, one
// that only dropped a connection is back after its next probe.
func (a *Activator) markDown(rev *revision, r *replica) {
	c := &a.ctl
	c.mu.Lock()
	defer c.mu.Unlock()
	st := rev.known[r.addr]
	if !c.current(rev) || st == nil || st.usable != r {
		return
	}
	st.usable = nil
	a.publish(rev)
	a.startProbe(rev, st)
	a.metrics.replicaDown.Inc()
	a.log.Info("replica unreachable, probing it again", zap.String("revision", rev.key), zap.String("address", r.addr))
}
