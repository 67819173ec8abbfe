package activatorsource

import (
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"ebb.dev/ebb/pkg/bucket"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
)

// Autoscalers is the activator's view of the autoscaler fleet, from its
// Leases in Ebb's namespace (pkg/platform/kubernetes/leader writes them):
// which replica holds each bucket, and where it takes reports. It routes
// the activator's reports (statsclient.Router). Safe for concurrent use.
type Autoscalers struct {
	prefix  string
	changed chan struct{} // buffered 1: a holder or an address changed

	mu      sync.Mutex // guards the fields below
	count   int        // the bucket count in use; 0 while no bucket Lease is seen
	holders []string   // per bucket
	stats   map[string]string
	leases  map[string]*coordinationv1.Lease
}

func newAutoscalers(prefix string) *Autoscalers {
	return &Autoscalers{prefix: prefix, changed: make(chan struct{}, 1), stats: map[string]string{},
		leases: map[string]*coordinationv1.Lease{}}
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

// update records a Lease and recomputes the routes; a renewal that
// changes no route signals nothing.
func (a *Autoscalers) update(l *coordinationv1.Lease, gone bool) {
	a.mu.Lock()
	if gone {
		delete(a.leases, l.Name)
	} else {
		a.leases[l.Name] = l
	}
	before := a.routesLocked()
	a.recomputeLocked()
	changed := before != a.routesLocked()
	a.mu.Unlock()
	if changed {
		select {
		case a.changed <- struct{}{}:
		default:
		}
	}
}

// recomputeLocked rebuilds the routes from the Leases: the bucket count
// most Leases with a holder agree on (replicas changing their count), each
// bucket's holder, each replica's stats address. a.mu is held.
func (a *Autoscalers) recomputeLocked() {
	held := map[int]int{} // per count: the Leases, a held one counting more than all free ones
	for _, l := range a.leases {
		if _, n, h, ok := cluster.ReadBucket(a.prefix, l); ok && h != "" {
			held[n] += bucket.MaxCount + 1
		} else if ok {
			held[n]++
		}
	}
	a.count = 0
	for n, k := range held {
		if a.count == 0 || k > held[a.count] || k == held[a.count] && n > a.count {
			a.count = n
		}
	}
	a.holders = make([]string, a.count)
	clear(a.stats)
	for _, l := range a.leases {
		if i, n, h, ok := cluster.ReadBucket(a.prefix, l); ok && n == a.count {
			a.holders[i] = h
		} else if r, ok := cluster.ReadReplica(a.prefix, l); ok {
			a.stats[r.Identity] = r.Stats
		}
	}
}

// routesLocked is the routes as one comparable string. a.mu is held.
func (a *Autoscalers) routesLocked() string {
	s := ""
	for _, h := range a.holders {
		s += h + "=" + a.stats[h] + ";"
	}
	return s
}

// Route implements statsclient.Router: the revision's bucket and the
// stats address of its holder ("" while none is known).
func (a *Autoscalers) Route(revision string) (bucketName, addr string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.count == 0 {
		return "", ""
	}
	i := bucket.Of(revision, a.count)
	return bucket.Name(a.prefix, i, a.count), a.stats[a.holders[i]]
}

// Changed implements statsclient.Router.
func (a *Autoscalers) Changed() <-chan struct{} { return a.changed }
