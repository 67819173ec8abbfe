package autoscaler

// slabRevisions is how many revisions of one phase share one allocation
// (revisionSlabs).
const slabRevisions = 8

// revisionSlabs hands out the memory of new revisions so that revisions
// of one phase, which the schedule closes one after another, lie next to
// each other: slabRevisions of them in one allocation of about 5 KiB.
// Allocated one by one, in the order they are added, the revisions of
// one phase are a hundred revisions apart (phases): at 100,000 revisions
// each close of a second then starts on a memory page no close before it
// touched, and pays for a TLB miss as well as for the cache misses.
//
// A slot is never reused: a deleted revision's memory is freed with its
// slab, once no revision of the slab is referenced. Under churn a live
// revision may keep up to slabRevisions-1 deleted ones' memory; a deleted
// revision lets go of its decider (finish), so what they keep is their
// structs (640 bytes each) and their decision histories.
//
// Guarded by the Autoscaler's mu (Upsert).
type revisionSlabs [phases][]revision

// next returns the zero memory of a new revision of the given phase.
func (s *revisionSlabs) next(phase uint8) *revision {
	free := s[phase]
	if len(free) == 0 {
		free = make([]revision, slabRevisions)
	}
	r := &free[0]
	s[phase] = free[1:]
	return r
}
