package autoscaler

import (
	"testing"
	"time"

	"ebb.dev/ebb/pkg/scaling/decider"
)

// TestSeriesRefFollowsTheStore: a revision's view of its chart
// (seriesRef) sees every change of which charts exist: a chart evicted by
// a viewer is not written any more, room made by a removal is taken, and
// a chart a viewer made is the one written.
func TestSeriesRefFollowsTheStore(t *testing.T) {
	st := newSeriesStore(2)
	running := &decider.Decision{At: time.Unix(100, 0), Desired: 1, Recommended: 1}
	a, b, c := RevisionKey{"ns", "a"}, RevisionKey{"ns", "b"}, RevisionKey{"ns", "c"}
	var refA, refB, refC seriesRef
	st.record(&refA, a, running, 1, 10)
	st.record(&refB, b, running, 1, 10)
	st.record(&refC, c, running, 1, 10) // full: no chart
	if got := len(st.points(a, 0)); got != 1 {
		t.Fatalf("a's chart has %d points, want 1", got)
	}
	if refC.s != nil {
		t.Fatal("c got a chart in a full store")
	}
	// A viewer looks at c: b (the least recently looked at) is evicted.
	if got := len(st.points(c, 0)); got != 0 {
		t.Fatalf("c's new chart has %d points, want 0", got)
	}
	evicted := refB.s
	st.record(&refB, b, running, 1, 10)
	st.record(&refC, c, running, 1, 10)
	if n := len(evicted.since(0)); n != 1 {
		t.Errorf("the evicted chart of b was written after its eviction: %d points, want 1", n)
	}
	if refB.s != nil {
		t.Error("b kept a chart the store evicted")
	}
	if got := len(st.points(c, 0)); got != 1 {
		t.Errorf("c's chart (made by the viewer) has %d points, want 1", got)
	}
	// A removal makes room: b's next decision takes it.
	st.forget(a)
	st.record(&refB, b, running, 1, 10)
	if got := len(st.points(b, 0)); got != 1 {
		t.Errorf("b's chart after a's removal has %d points, want 1", got)
	}
	if n := st.cache.Len(); n > 2 {
		t.Errorf("%d charts kept, want at most 2", n)
	}
}
