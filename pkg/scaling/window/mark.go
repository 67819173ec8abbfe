package window

// Mark is what Buckets.Record of one second changes in a Buckets that
// already holds data of a run within the window: the header and one
// bucket. A caller that may need a copy of the Buckets from before such
// a Record (a decision that may have to be taken again) marks it instead
// of copying its ring, and builds the copy afterwards only when it needs
// it (CloneInto, then Undo): the ring is read only then.
type Mark struct {
	head Buckets // b before the Record, its ring left out
	i    int     // the bucket the Record of sec may change
	old  float64 // its value before
}

// MarkInto fills m with what a Record of sec (and nothing else) can
// change, and reports whether it could: not when the Record would start
// a new run of data (nothing recorded yet, or sec a window or more after
// the last one), which rewrites the whole ring, nor when sec is more than
// a second after the last one recorded, which clears the buckets of the
// seconds between.
func (b *Buckets) MarkInto(m *Mark, sec int64) bool {
	if !b.hasData || sec > b.last+1 || b.buckets == nil {
		return false
	}
	m.head = *b
	m.head.buckets = nil
	m.i = b.index(sec)
	m.old = b.buckets[m.i]
	return true
}

// Undo puts b back as it was when m was marked, b having had at most one
// Record since, of the second m was marked for. It is meant for a copy
// (CloneInto) of the marked Buckets taken after that Record.
func (b *Buckets) Undo(m *Mark) {
	ring := b.buckets
	*b = m.head
	b.buckets = ring
	ring[m.i] = m.old
}
