package window

import "time"

// MaxWindow is the maximum of the values recorded in the last Slots slots of
// a fixed granularity: slot index = unix seconds / granularity, and a value
// recorded under index i is seen until a value is recorded under an index
// >= i+Slots. It backs the scale-down delay (Knative's
// pkg/autoscaler/aggregation/max). Build one with NewMaxWindow.
type MaxWindow struct {
	// ring holds a descending run of (index, value): the front is the
	// maximum; each entry is larger than every entry behind it. At most one
	// entry per index, so Slots entries suffice.
	ring        []maxEntry
	head, size  int
	slots       int64
	granularity int64 // seconds
}

type maxEntry struct {
	index int64
	value int32
}

// NewMaxWindow returns a window of ceil(duration/granularity) slots (at least
// one). granularity is whole seconds, at least one.
func NewMaxWindow(duration, granularity time.Duration) *MaxWindow {
	g := int64(granularity / time.Second)
	if g < 1 {
		g = 1
	}
	slots := (int64(duration/time.Second) + g - 1) / g
	if slots < 1 {
		slots = 1
	}
	return &MaxWindow{ring: make([]maxEntry, slots), slots: slots, granularity: g}
}

// Slots is the number of slots of the window.
func (w *MaxWindow) Slots() int64 { return w.slots }

func (w *MaxWindow) at(k int) *maxEntry { return &w.ring[(w.head+k)%len(w.ring)] }

// Record records v in now's slot, dropping slots that left the window.
func (w *MaxWindow) Record(now time.Time, v int32) {
	idx := now.Unix() / w.granularity
	for w.size > 0 && w.at(0).index <= idx-w.slots {
		w.head = (w.head + 1) % len(w.ring)
		w.size--
	}
	for w.size > 0 && w.at(w.size-1).value <= v {
		w.size--
	}
	if w.size > 0 && w.at(w.size-1).index >= idx {
		return // a larger value of this slot stays; v expires with it
	}
	*w.at(w.size) = maxEntry{index: idx, value: v}
	w.size++
}

// Current is the maximum value in the window as of the last Record; 0 when
// nothing was recorded.
func (w *MaxWindow) Current() int32 {
	if w.size == 0 {
		return 0
	}
	return w.at(0).value
}

// clone returns a copy of w that shares nothing with it.
func (w *MaxWindow) clone() *MaxWindow { return w.CloneInto(nil) }

// CloneInto is Clone reusing dst's memory (nil: new); dst is overwritten.
func (w *MaxWindow) CloneInto(dst *MaxWindow) *MaxWindow {
	if dst == nil {
		dst = new(MaxWindow)
	}
	ring := dst.ring
	*dst = *w
	dst.ring = append(ring[:0], w.ring...)
	return dst
}
