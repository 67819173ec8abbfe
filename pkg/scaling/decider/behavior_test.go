package decider

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/behavior"
	"ebb.dev/ebb/pkg/config"
)

func podsPer10s(n int32) []behavior.Policy {
	return []behavior.Policy{{Type: behavior.Pods, Value: n, PeriodSeconds: 10}}
}

// recommendations replays steps and returns the recommendation of every
// decision, keyed by its second.
func recommendations(rev *config.Revision, steps []step) map[int64]int32 {
	got := map[int64]int32{}
	for _, o := range replay(rev, steps) {
		got[o.T] = o.Recommended
	}
	return got
}

func TestKPABehaviorScaleUpLimitedByPodsPolicy(t *testing.T) {
	rev := knativeDefaults()
	rev.PanicThreshold = 1000 // stay out of panic
	rev.Behavior = &behavior.Behavior{ScaleUp: &behavior.Rules{Policies: podsPer10s(2)}}
	got := recommendations(rev, constant(0, 44, step{conc: 700, ready: 1}))
	// The KPA wants 10 from the start. From the scale target's 1 pod, each
	// 10s period allows 2 more: the event of t=0 is outside the period at
	// t=10 (exactly a period old), and so on.
	want := map[int64]int32{0: 3, 8: 3, 10: 5, 18: 5, 20: 7, 30: 9, 38: 9, 40: 10, 44: 10}
	for sec, w := range want {
		if got[sec] != w {
			t.Errorf("t=%d: recommendation %d, want %d", sec, got[sec], w)
		}
	}
	d := New(rev, at(0), 1)
	d.Record(at(0), 700, 0)
	dec := d.Decide(Input{Now: at(0), Ready: 1, Reachable: true})
	if r := findReason(dec, ScaleUpLimit); r == nil || r.values != [3]float64{10, 3, 1} || r.Detail != "Max" {
		t.Errorf("ScaleUpLimit reason = %+v, want wanted 10, allowed 3, current 1, Max", r)
	} else if msg := r.Message(); msg != "the scaleUp policies (selectPolicy Max) allow at most 3 pods now (current 1); wanted 10" {
		t.Errorf("message %q", msg)
	}
}

func TestKPABehaviorScaleDownStabilized(t *testing.T) {
	rev := knativeDefaults()
	rev.StableWindow, rev.PanicWindow, rev.PanicThreshold, rev.MaxScaleDownRate = 6*time.Second, time.Second, 1000, 1000
	rev.Behavior = &behavior.Behavior{
		ScaleUp:   &behavior.Rules{Policies: []behavior.Policy{{Type: behavior.Percent, Value: 1000, PeriodSeconds: 1}}},
		ScaleDown: &behavior.Rules{StabilizationWindowSeconds: ptrTo(int32(30))},
	}
	steps := append(constant(0, 9, step{conc: 700, ready: 10}), constant(10, 50, step{conc: 0, ready: 10})...)
	got := recommendations(rev, steps)
	// The KPA alone: 10 until t=8, then 9, 5, 2 and 0 from t=16 (6s window).
	// The 30s window keeps the highest raw recommendation younger than 30s.
	want := map[int64]int32{8: 10, 16: 10, 36: 10, 38: 9, 40: 5, 42: 2, 44: 0}
	if diff := cmp.Diff(want, pickRecs(got, 8, 16, 36, 38, 40, 42, 44)); diff != "" {
		t.Errorf("recommendations (-want +got):\n%s", diff)
	}
}

func TestKPABehaviorScalesFromZero(t *testing.T) {
	rev := knativeDefaults()
	rev.InitialScale, rev.InitialReplicas = 0, 0
	// 100% of 0 pods is 0 pods: without Ebb's rule the revision would stay
	// at zero forever.
	rev.Behavior = &behavior.Behavior{ScaleUp: &behavior.Rules{Policies: []behavior.Policy{{Type: behavior.Percent, Value: 100, PeriodSeconds: 15}}}}
	got := replay(rev, []step{{t: 0, conc: 1, ready: 0}})
	if got[0].Recommended != 1 || got[0].Desired != 1 {
		t.Errorf("from zero: %+v, want recommendation and desired 1", got[0])
	}
}

// TestKPABehaviorRecordsScaleEvents: every change of the scale target is an
// event, including min-scale's: the period start counts it.
func TestKPABehaviorRecordsScaleEvents(t *testing.T) {
	rev := knativeDefaults()
	rev.MinScale, rev.PanicThreshold = 3, 1000
	rev.Behavior = &behavior.Behavior{ScaleUp: &behavior.Rules{Policies: podsPer10s(2)}}
	// t=0: no data, min-scale lifts the target from 1 to 3 (event +2).
	// t=2: the KPA wants 10; the period start is 3-2 = 1, so 1+2 = 3.
	steps := append([]step{{t: 0, noMetric: true, ready: 3}, {t: 1, noMetric: true, ready: 3}}, constant(2, 10, step{conc: 700, ready: 3})...)
	got := recommendations(rev, steps)
	if got[2] != 3 || got[10] != 5 {
		t.Errorf("recommendations at 2 and 10: %d, %d; want 3 (the min-scale event counts) and 5", got[2], got[10])
	}
}

func pickRecs(m map[int64]int32, ts ...int64) map[int64]int32 {
	out := map[int64]int32{}
	for _, t := range ts {
		out[t] = m[t]
	}
	return out
}

func findReason(d Decision, c Code) *Reason {
	for _, r := range d.Reasons() {
		if r.Code == c {
			return &r
		}
	}
	return nil
}

func BenchmarkDecideWithBehavior(b *testing.B) {
	rev := knativeDefaults()
	rev.Behavior = behavior.Default(&behavior.Behavior{})
	d := New(rev, at(0), 3)
	b.ReportAllocs()
	for i := range b.N {
		now := at(int64(i))
		d.Record(now, 150+float64(i%7)*60, 200)
		_ = d.Decide(Input{Now: now, Ready: 3, Reachable: true})
	}
}

func BenchmarkHPADecide(b *testing.B) {
	rev := hpaRevision(conc(10), config.MetricTarget{Metric: config.MetricRPS, Target: 50})
	rev.Behavior = behavior.Default(&behavior.Behavior{})
	st := NewStepper(rev, StepperOptions{First: at(0), Ready: 3})
	ready := int32(3)
	ps := pods(f(10), f(12), f(9))
	b.ReportAllocs()
	for i := range b.N {
		st.Step(at(int64(i)), Second{Pods: ps, Ready: &ready})
	}
}
