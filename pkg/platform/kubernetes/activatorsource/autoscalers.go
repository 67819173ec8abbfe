package activatorsource

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"ebb.dev/ebb/pkg/autoscaler/bucket"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
)

// defaultLeaseDuration judges a Lease that states no duration (the
// autoscaler's --lease-duration default).
const defaultLeaseDuration = 15 * time.Second

// Autoscalers is the activator's view of the autoscaler fleet, from its
// Leases in Ebb's namespace (pkg/platform/kubernetes/leader writes them):
// which replica holds each bucket, of each bucket count seen, and where
// it takes reports. It routes the activator's reports
// (statsclient.Router) by bucket.Route: to the live holder of the
// revision's bucket in whichever count has one, never by a count that
// only dead replicas' Leases still name. Liveness is judged on this
// activator's clock from when a Lease was last seen to change, as the
// replicas judge it. Safe for concurrent use.
type Autoscalers struct {
	prefix  string
	now     func() time.Time
	changed chan struct{} // buffered 1: a holder or an address changed

	mu       sync.Mutex // guards the fields below
	counts   []int      // the bucket counts of the Leases seen, largest first
	buckets  map[int][]*seenLease
	replicas map[string]*seenLease // by identity
	leases   map[string]*seenLease // by name
	at       time.Time             // the instant Route judges at
}

// seenLease is a fleet Lease as last seen, and when it last changed.
type seenLease struct {
	holder   string
	renewed  time.Time // its renew time, to tell a change
	changed  time.Time // on this activator's clock
	duration time.Duration
	index    int
	count    int    // its bucket count (a replica's: what it says)
	stats    string // a replica's stats address
	replica  bool
}

func (l *seenLease) live(now time.Time) bool {
	return l != nil && l.holder != "" && now.Sub(l.changed) < l.duration
}

func newAutoscalers(prefix string) *Autoscalers {
	return &Autoscalers{prefix: prefix, now: time.Now, changed: make(chan struct{}, 1), buckets: map[int][]*seenLease{},
		replicas: map[string]*seenLease{}, leases: map[string]*seenLease{}}
}

// leasesSelector selects the fleet's bucket and replica Leases.
func leasesSelector(lo *metav1.ListOptions) {
	lo.LabelSelector = config.ComponentLabel + " in (" + cluster.ComponentBucket + "," + cluster.ComponentReplica + ")"
}

// handler keeps the view current from the Leases' informer.
func (a *Autoscalers) handler() cache.ResourceEventHandler {
	set := func(obj any, gone bool) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if l, ok := obj.(*coordinationv1.Lease); ok {
			a.update(l, gone)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { set(obj, false) },
		UpdateFunc: func(_, obj any) { set(obj, false) },
		DeleteFunc: func(obj any) { set(obj, true) },
	}
}

// update records a Lease; a renewal that changes no holder nor address
// signals nothing.
func (a *Autoscalers) update(l *coordinationv1.Lease, gone bool) {
	now := a.now()
	a.mu.Lock()
	before := a.routesLocked()
	prev := a.leases[l.Name]
	if gone {
		delete(a.leases, l.Name)
	} else if s, ok := a.read(l); ok {
		if prev != nil && prev.holder == s.holder && prev.renewed.Equal(s.renewed) {
			s.changed = prev.changed // the same record: its clock keeps running
		} else {
			s.changed = now
		}
		a.leases[l.Name] = s
	}
	a.indexLocked()
	changed := before != a.routesLocked()
	a.mu.Unlock()
	if changed {
		select {
		case a.changed <- struct{}{}:
		default:
		}
	}
}

// read is a fleet Lease as seen; ok false for any other.
func (a *Autoscalers) read(l *coordinationv1.Lease) (*seenLease, bool) {
	s := &seenLease{holder: ptrString(l.Spec.HolderIdentity), duration: defaultLeaseDuration}
	if l.Spec.RenewTime != nil {
		s.renewed = l.Spec.RenewTime.Time
	}
	if d := l.Spec.LeaseDurationSeconds; d != nil && *d > 0 {
		s.duration = time.Duration(*d) * time.Second
	}
	if i, n, _, ok := cluster.ReadBucket(a.prefix, l); ok {
		s.index, s.count = i, n
		return s, true
	}
	if r, ok := cluster.ReadReplica(a.prefix, l); ok {
		s.replica, s.count, s.stats = true, r.Buckets, r.Stats
		return s, true
	}
	return nil, false
}

func ptrString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// indexLocked rebuilds the indexes from the Leases. a.mu is held.
func (a *Autoscalers) indexLocked() {
	clear(a.buckets)
	clear(a.replicas)
	a.counts = a.counts[:0]
	for _, s := range a.leases {
		if s.replica {
			a.replicas[s.holder] = s
			continue
		}
		bs := a.buckets[s.count]
		if bs == nil {
			bs = make([]*seenLease, s.count)
			a.buckets[s.count] = bs
			a.counts = append(a.counts, s.count)
		}
		bs[s.index] = s
	}
	slices.Sort(a.counts)
	slices.Reverse(a.counts)
}

// routesLocked is the holders and addresses as one comparable string.
// a.mu is held.
func (a *Autoscalers) routesLocked() string {
	var sb strings.Builder
	for _, n := range a.counts {
		sb.WriteString(strconv.Itoa(n) + ":")
		for _, s := range a.buckets[n] {
			if s != nil {
				sb.WriteString(s.holder + "=" + a.statsOf(s.holder))
			}
			sb.WriteByte(';')
		}
	}
	return sb.String()
}

func (a *Autoscalers) statsOf(id string) string {
	if r := a.replicas[id]; r != nil {
		return r.stats
	}
	return ""
}

// routes is bucket.Routes on the view at the instant a.at (a conversion
// of the pointer: no allocation per route). a.mu is held.
type routes Autoscalers

func (r *routes) Counts() []int { return r.counts }

func (r *routes) Holder(i, n int) (string, bool) {
	bs := r.buckets[n]
	if i < 0 || i >= len(bs) || bs[i] == nil {
		return "", false
	}
	return bs[i].holder, bs[i].live(r.at)
}

func (r *routes) Member(id string, n int) bool {
	s := r.replicas[id]
	return s.live(r.at) && s.count == n
}

// Route implements statsclient.Router: the revision's bucket and the
// stats address of its live holder ("" while none is known).
func (a *Autoscalers) Route(revision string) (bucketName, addr string) {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.at = now
	i, n, h, ok := bucket.Route(revision, (*routes)(a))
	if !ok {
		return "", ""
	}
	return bucket.Name(a.prefix, i, n), a.statsOf(h)
}

// Changed implements statsclient.Router.
func (a *Autoscalers) Changed() <-chan struct{} { return a.changed }
