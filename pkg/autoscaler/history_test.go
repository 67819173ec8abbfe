package autoscaler

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/decider"
)

// TestHistoryFoldShowsTheLatestNumbers: a decision folded into the one
// before it (same counts and reason codes, other numbers) shows the latest
// stable average in its header and in its reasons alike.
func TestHistoryFoldShowsTheLatestNumbers(t *testing.T) {
	rev := &config.Revision{
		Class: config.ClassKPA, Metric: config.MetricConcurrency,
		Total: 100, TargetUtilization: 1, Target: 100, PanicThreshold: 2, TargetBurstCapacity: 211,
		StableWindow: 6 * time.Second, PanicWindow: 6 * time.Second, Aggregation: config.AggregationLinear,
		MaxScaleUpRate: 1000, MaxScaleDownRate: 2, InitialScale: 1, InitialReplicas: 1,
		ProgressDeadline: 600 * time.Second, ActivatorCapacity: 100, TickInterval: time.Second,
	}
	d := decider.New(rev, time.Unix(0, 0), 1)
	h := newHistory(4)
	var stables []float64
	for sec, conc := range []float64{4, 5, 6, 7, 8} {
		now := time.Unix(int64(sec+1), 0)
		d.Record(now, conc, 0)
		dec := d.Decide(decider.Input{Now: now, Ready: 1, Reachable: true})
		stables = append(stables, dec.Stable)
		h.add(&dec, 1)
	}
	v := h.last(1)[0]
	if latest := stables[len(stables)-1]; v.Repeated == 0 || v.Stable != latest || stables[len(stables)-1-v.Repeated] == latest {
		t.Fatalf("want the last decisions folded, with the latest stable average %v in the header; got %+v (averages %v)", latest, v, stables)
	}
	want := "stable average " + strconv.FormatFloat(widen(float32(v.Stable)), 'g', 10, 64) + " "
	for _, r := range v.Reasons {
		if r.Code == string(decider.StableTarget) && !strings.HasPrefix(r.Message, want) {
			t.Errorf("folded decision: header stable %v, reason %q; want the reason to say %q", v.Stable, r.Message, want)
		}
	}
}
