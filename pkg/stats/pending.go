package stats

import (
	"cmp"
	"maps"
	"slices"
	"strings"
)

// Pending holds the activator reports a revision has received since it
// last closed a second, to be taken with the next one. A pod's newer
// window replaces its older one, and of its pokes (Period-0 reports:
// traffic arrived at zero) the one with the most load is kept, so a pod
// that floods a revision holds one slot of each kind, and the other pods'
// reports (a cold request's poke) still count. At most Max pods hold
// slots; reports of further pods are dropped and counted. The autoscaler
// and `autoscaler whatif` both use it: one rule for which reports count.
// The zero value holds none and has no bound; it is not safe for
// concurrent use (the autoscaler guards it with the revision's lock).
type Pending struct {
	Max     int // pods with slots; 0: no bound
	slots   map[pendingKey]Stat
	dropped int
}

// pendingKey is one pod's slot: its last window, and its strongest poke,
// are kept apart.
type pendingKey struct {
	pod  string
	poke bool
}

// Add records st by the rule above.
func (p *Pending) Add(st Stat) {
	k := pendingKey{pod: st.PodName, poke: st.Period == 0}
	old, ok := p.slots[k]
	switch {
	case !ok && p.Max > 0 && len(p.slots) >= p.Max:
		p.dropped++
	case !ok, !k.poke, st.AverageConcurrency > old.AverageConcurrency:
		if p.slots == nil {
			p.slots = map[pendingKey]Stat{}
		}
		p.slots[k] = st
	}
}

// Take appends the held reports to dst in a fixed order (by pod, then
// windows before pokes), so that their sum does not depend on map order,
// empties p, and returns them with the number of reports dropped since
// the last Take.
func (p *Pending) Take(dst []Stat) ([]Stat, int) {
	dropped := p.dropped
	p.dropped = 0
	if len(p.slots) == 0 {
		return dst, dropped
	}
	if len(p.slots) == 1 {
		for _, st := range p.slots {
			dst = append(dst, st)
		}
		clear(p.slots)
		return dst, dropped
	}
	keys := slices.SortedFunc(maps.Keys(p.slots), func(a, b pendingKey) int {
		if c := strings.Compare(a.pod, b.pod); c != 0 {
			return c
		}
		return cmp.Compare(b2i(a.poke), b2i(b.poke))
	})
	for _, k := range keys {
		dst = append(dst, p.slots[k])
	}
	clear(p.slots)
	return dst, dropped
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Len is the number of slots held.
func (p *Pending) Len() int { return len(p.slots) }
