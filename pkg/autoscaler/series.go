package autoscaler

import (
	"sync"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"

	"ebb.dev/ebb/pkg/scaling/decider"
)

// seriesLength is how many decisions a chart keeps: 10 minutes at the 2s tick.
const seriesLength = 300

// point is one decision on a revision's chart.
type point struct {
	Time        int64   `json:"t"` // unix seconds
	Stable      float64 `json:"stable"`
	Panic       float64 `json:"panicAverage"`
	Target      float64 `json:"target"`
	Desired     int32   `json:"desired"`
	Recommended int32   `json:"recommended"`
	Ready       int32   `json:"ready"`
	PanicMode   bool    `json:"panic"`
	Activator   bool    `json:"activatorInPath"`
	HasData     bool    `json:"hasData"`
}

// series is a ring of the last points of one revision. mu guards it: the
// revision's goroutine appends, the API reads.
type series struct {
	mu     sync.Mutex
	points []point
	next   int
}

func (s *series) add(p point) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.points) < seriesLength {
		s.points = append(s.points, p)
		return
	}
	s.points[s.next] = p
	s.next = (s.next + 1) % seriesLength
}

// since returns the points after unix second t, oldest first.
func (s *series) since(t int64) []point {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]point, 0, len(s.points))
	n, start := len(s.points), 0
	if n == seriesLength {
		start = s.next
	}
	for i := range n {
		if p := s.points[(start+i)%n]; p.Time > t {
			out = append(out, p)
		}
	}
	return out
}

// seriesStore keeps charts for a bounded number of revisions, so memory
// does not grow with 10,000 idle revisions: a revision gets a chart when
// someone looks at it (the least recently looked at is evicted then), or
// when it runs or wants pods while there is room. Recording never evicts:
// at 100,000 busy revisions it would replace a chart at every decision.
type seriesStore struct {
	cache *lru.Cache[RevisionKey, *series]
	size  int
	// gen changes after every change of which revisions have a chart (an
	// add, an eviction, a removal): a revision that saw the store at gen
	// knows its chart, or that it has none, without looking it up again
	// (seriesRef). It wraps after 2^32 changes, which no revision sees
	// between two of its decisions.
	gen atomic.Uint32
}

// seriesRef is a revision's view of its chart as of the store's
// generation gen: the chart, or none (nil; full: and the store had no
// room). Owned by the revision's owner.
type seriesRef struct {
	s    *series
	gen  uint32 // 0: never looked (the store's generations start at 1, and skip 0 when they wrap)
	full bool
}

func newSeriesStore(size int) *seriesStore {
	st := &seriesStore{size: max(size, 1)}
	st.gen.Store(1)
	c, err := lru.NewWithEvict(st.size, func(RevisionKey, *series) { st.changed() }) // after the entry went
	if err != nil {
		panic(err) // only for a size < 1, excluded above
	}
	st.cache = c
	return st
}

// changed moves the generation on, after a change of which charts exist.
func (st *seriesStore) changed() {
	if st.gen.Add(1) == 0 { // 0 is a view's "never looked"
		st.gen.Add(1)
	}
}

// record adds a decision to the revision's chart, creating the chart when
// the revision runs or wants pods and there is room. ref is the
// revision's view of the store: looked up again only when which charts
// exist changed since (the generation is read before the lookup, so a
// change during it is seen at the next decision).
func (st *seriesStore) record(ref *seriesRef, key RevisionKey, d *decider.Decision, ready int32, target float64) {
	if g := st.gen.Load(); ref.gen != g {
		ref.s, _ = st.cache.Peek(key)
		ref.gen, ref.full = g, ref.s == nil && st.cache.Len() >= st.size
	}
	s := ref.s
	if s == nil {
		if d.Desired == 0 && d.Recommended <= 0 && ready == 0 || ref.full {
			return
		}
		s = &series{}
		if prev, found, _ := st.cache.PeekOrAdd(key, s); found {
			s = prev // a viewer made it meanwhile
		}
		st.changed()
		ref.s = s
	}
	s.add(point{Time: d.At.Unix(), Stable: finite(d.Stable), Panic: finite(d.PanicAverage), Target: finite(target), Desired: d.Desired,
		Recommended: d.Recommended, Ready: ready, PanicMode: d.Panic, Activator: d.ActivatorInPath, HasData: d.HasData})
}

// points returns the chart of a revision after unix second t, creating an
// empty one so that the revision is recorded from now on.
func (st *seriesStore) points(key RevisionKey, t int64) []point {
	s, ok := st.cache.Get(key)
	if !ok {
		s = &series{}
		st.cache.Add(key, s)
		st.changed()
	}
	return s.since(t)
}

func (st *seriesStore) forget(key RevisionKey) { st.cache.Remove(key) }
