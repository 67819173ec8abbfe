package behavior

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// bytes turns fuzz input into bounded numbers; past the end it reads 0.
type bytes struct{ b []byte }

func (r *bytes) u8() uint8 {
	if len(r.b) == 0 {
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

// genBehavior is nil, {} or rules with short windows and periods, so that
// entries expire within a run.
func genBehavior(r *bytes) *Behavior {
	switch r.u8() % 3 {
	case 0:
		return nil
	case 1:
		return &Behavior{}
	}
	sel := []Select{Max, Min, Disabled}
	rules := func() *Rules {
		return &Rules{
			StabilizationWindowSeconds: ptr(int32(r.u8() % 40)),
			SelectPolicy:               ptr(sel[r.u8()%3]),
			Policies: []Policy{
				{Type: Pods, Value: 1 + int32(r.u8()%5), PeriodSeconds: 1 + int32(r.u8()%30)},
				{Type: Percent, Value: 1 + int32(r.u8()%200), PeriodSeconds: 1 + int32(r.u8()%30)},
			},
		}
	}
	return &Behavior{ScaleUp: rules(), ScaleDown: rules()}
}

// FuzzHistoryMatchesNormalize: a History, whose stabilization reads its
// index, gives exactly what Normalize gives when the same history is
// spelled out and scanned; decisions come at random steps of time, with
// the behavior sometimes changing.
func FuzzHistoryMatchesNormalize(f *testing.F) {
	f.Add([]byte{2, 10, 3, 1, 7, 9, 2, 200, 5, 0, 1, 50, 4, 9, 9, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	f.Add([]byte{0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &bytes{data}
		b := genBehavior(r)
		var h History
		now, current := t0, int32(1+r.u8()%20)
		for i := 0; i < 200 && len(r.b) > 0; i++ {
			if r.u8()%16 == 0 {
				b = genBehavior(r)
			}
			now = now.Add(time.Duration(r.u8()%8) * time.Second)
			in := Input{Now: now, Current: current, Min: 1, Max: 60, Desired: int32(r.u8() % 80), Behavior: b}
			got := h.Normalize(in)
			recs, ups, downs := h.Snapshot()
			if inBounds(in) {
				recs = recs[:len(recs)-1] // the one Normalize stored after deciding
			}
			in.Recommendations, in.ScaleUps, in.ScaleDowns = recs, ups, downs
			if diff := cmp.Diff(Normalize(in), got); diff != "" {
				t.Fatalf("decision %d at %s: History differs from Normalize (-scan +history):\n%s", i, now.Sub(t0), diff)
			}
			h.RecordScale(now, current, got.Replicas)
			current = got.Replicas
		}
	})
}

func TestHistorySteadyStateDoesNotAllocate(t *testing.T) {
	b := Default(&Behavior{})
	var h History
	now := t0
	step := func() {
		now = now.Add(2 * time.Second)
		res := h.Normalize(Input{Now: now, Current: 5, Min: 1, Max: 50, Desired: int32(now.Unix() % 9), Behavior: b})
		h.RecordScale(now, 5, res.Replicas)
	}
	for range 1000 { // grow the queues past the 300s window
		step()
	}
	if n := testing.AllocsPerRun(1000, step); n != 0 {
		t.Errorf("%v allocations per decision, want 0", n)
	}
}
