package decider

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/config"
)

var epoch = time.Unix(1_767_225_600, 0)

func at(s int64) time.Time { return epoch.Add(time.Duration(s) * time.Second) }

// knativeDefaults is the effective revision of Knative's defaults with no
// annotation (built by hand so the decider's tests do not depend on config
// parsing).
func knativeDefaults() *config.Revision {
	return &config.Revision{
		Class: config.ClassKPA, Metric: config.MetricConcurrency,
		Total: 100, TargetUtilization: 0.7, Target: 70,
		PanicThreshold: 2, TargetBurstCapacity: 211,
		StableWindow: 60 * time.Second, PanicWindow: 6 * time.Second,
		Aggregation:    config.AggregationLinear,
		MaxScaleUpRate: 1000, MaxScaleDownRate: 2,
		InitialScale: 1, InitialReplicas: 1,
		EnableScaleToZero: true, ScaleToZeroGracePeriod: 30 * time.Second,
		ProgressDeadline: 600 * time.Second, ActivatorCapacity: 100,
		TickInterval: 2 * time.Second,
	}
}

// step is one second of input.
type step struct {
	t           int64
	conc        float64
	noMetric    bool
	ready       int32
	unreachable bool
}

// out is the part of a decision the tests compare.
type out struct {
	T           int64
	Recommended int32
	Desired     int32
	Panic       bool
	EBC         int32
	Activator   bool
	State       State
}

// replay runs steps (one per second, ready carried in each) and returns the
// decisions at even seconds, plus pokes.
func replay(rev *config.Revision, steps []step) []out {
	d := New(rev, at(steps[0].t), steps[0].ready)
	var got []out
	for _, s := range steps {
		poke := false
		if !s.noMetric {
			d.Record(at(s.t), s.conc, 0)
			poke = d.WantsPoke(s.conc)
		}
		if s.t%2 != 0 && !poke {
			continue
		}
		dec := d.Decide(Input{Now: at(s.t), Ready: s.ready, Reachable: !s.unreachable})
		got = append(got, out{s.t, dec.Recommended, dec.Desired, dec.Panic, dec.EBC, dec.ActivatorInPath, dec.State})
	}
	return got
}

// constant returns steps from..to with the same values.
func constant(from, to int64, s step) []step {
	var out []step
	for t := from; t <= to; t++ {
		s.t = t
		out = append(out, s)
	}
	return out
}

func pick(all []out, ts ...int64) []out {
	var res []out
	for _, o := range all {
		for _, t := range ts {
			if o.T == t {
				res = append(res, o)
			}
		}
	}
	return res
}

func TestScaleToZeroTimeline(t *testing.T) {
	// Traffic (10 in flight on one pod) until t=10, then none: the stable
	// average reaches 0 at t=70, which marks the revision inactive.
	traffic := append(constant(0, 10, step{conc: 10, ready: 1}), constant(11, 110, step{conc: 0, ready: 1})...)
	tests := []struct {
		name string
		tbc  float64
		at   []int64
		want []out
	}{{
		name: "TBC 211 keeps the activator in the path: the pod goes at once",
		tbc:  211, at: []int64{0, 68, 70, 72},
		want: []out{
			{T: 0, Recommended: 1, Desired: 1, EBC: -121, Activator: true, State: active},
			{T: 68, Recommended: 1, Desired: 1, EBC: -111, Activator: true, State: active},
			{T: 70, Recommended: 0, Desired: 0, EBC: -111, Activator: true, State: inactive},
			{T: 72, Recommended: 0, Desired: 0, EBC: -111, Activator: true, State: inactive},
		},
	}, {
		name: "TBC 0: the activator enters at T+60, the pod goes at T+90",
		tbc:  0, at: []int64{0, 70, 98, 100},
		want: []out{
			{T: 0, Recommended: 1, Desired: 1, EBC: 0, Activator: false, State: active},
			{T: 70, Recommended: 0, Desired: 1, EBC: 0, Activator: true, State: inactive},
			{T: 98, Recommended: 0, Desired: 1, EBC: 0, Activator: true, State: inactive},
			{T: 100, Recommended: 0, Desired: 0, EBC: 0, Activator: true, State: inactive},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rev := knativeDefaults()
			rev.TargetBurstCapacity = tc.tbc
			got := pick(replay(rev, traffic), tc.at...)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decisions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPanic(t *testing.T) {
	// One pod at 7 in flight, then a burst of 350 from t=2 with 5 pods ready
	// from t=3, back to 7 at t=21. At t=2 the young panic window averages
	// (7+7+350)/3 = 121.3, which needs 2 pods: 2/1 >= 200%, panic. The panic
	// maximum then grows to 5 and holds; panic ends on the first tick more
	// than 60s after the last over-threshold tick (t=2), i.e. at t=64, when
	// the count falls to the rate-limited floor of 5/2.
	steps := append(constant(0, 2, step{conc: 7, ready: 1}), constant(3, 20, step{conc: 350, ready: 5})...)
	steps[2].conc = 350
	steps = append(steps, constant(21, 100, step{conc: 7, ready: 5})...)
	got := replay(knativeDefaults(), steps)
	want := []out{
		{T: 0, Recommended: 1, Desired: 1, EBC: -118, Activator: true, State: active},
		{T: 2, Recommended: 2, Desired: 2, Panic: true, EBC: -233, Activator: true, State: active},
		{T: 62, Recommended: 5, Desired: 5, Panic: true, EBC: 282, Activator: false, State: active},
		{T: 64, Recommended: 2, Desired: 2, Panic: false, EBC: 282, Activator: false, State: active},
	}
	if diff := cmp.Diff(want, pick(got, 0, 2, 62, 64)); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
	var prev int32
	for _, o := range got {
		if o.Panic && o.Recommended < prev {
			t.Errorf("t=%d: recommendation fell from %d to %d in panic", o.T, prev, o.Recommended)
		}
		prev = o.Recommended
	}
}

func TestCreationWithReadyPodsStartsInPanic(t *testing.T) {
	got := replay(knativeDefaults(), constant(0, 2, step{conc: 0, ready: 4}))
	want := []out{
		{T: 0, Recommended: 4, Desired: 4, Panic: true, EBC: 189, Activator: false, State: active},
		{T: 2, Recommended: 4, Desired: 4, Panic: true, EBC: 189, Activator: false, State: active},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}

func TestRateLimits(t *testing.T) {
	rev := knativeDefaults()
	rev.MaxScaleUpRate = 1.5
	rev.PanicThreshold = 10 // stay out of panic
	// 10 ready pods, 7000 in flight wants 100: up to ceil(1.5*10) = 15.
	up := replay(rev, constant(0, 0, step{conc: 7000, ready: 10}))
	// Panic at creation (10 ready) holds the creation count; skip it.
	rev.MaxScaleDownRate = 4
	d := New(rev, at(0), 1)
	d.Record(at(0), 0, 0)
	down := d.Decide(Input{Now: at(0), Ready: 10, Reachable: true})
	if up[0].Recommended != 15 {
		t.Errorf("scale up from 10 at rate 1.5: recommended %d, want 15", up[0].Recommended)
	}
	if down.Recommended != 2 {
		t.Errorf("scale down from 10 at rate 4: recommended %d, want floor(10/4) = 2", down.Recommended)
	}
	if !hasCode(down.Reasons(), ScaleDownRateLimited) {
		t.Errorf("reasons %v lack %s", down.Reasons(), ScaleDownRateLimited)
	}
	unreach := New(rev, at(0), 1)
	unreach.Record(at(0), 0, 0)
	if got := unreach.Decide(Input{Now: at(0), Ready: 10}).Recommended; got != 0 {
		t.Errorf("unreachable: recommended %d, want 0 (no scale-down floor)", got)
	}
}

func TestActivationScale(t *testing.T) {
	rev := knativeDefaults()
	rev.ActivationScale = 3
	got := replay(rev, []step{{t: 0, conc: 1, ready: 0}})
	if got[0].Recommended != 3 {
		t.Errorf("recommended %d, want activation-scale 3", got[0].Recommended)
	}
}

func TestScaleDownDelay(t *testing.T) {
	rev := knativeDefaults()
	rev.ScaleDownDelay = 10 * time.Second
	rev.PanicThreshold = 1000
	// 4 pods of load until t=4, then 1 pod's worth on 4 ready pods. The
	// 6-second stable window asks 3 at t=6 and 2 at t=8 (the floor of 4/2
	// ready); the 4 recorded at t=4 (slot 2) holds until slot 7 (t=14),
	// the 3 of t=6 for one slot more.
	steps := append(constant(0, 4, step{conc: 280, ready: 1}), constant(5, 30, step{conc: 70, ready: 4})...)
	rev.StableWindow, rev.PanicWindow = 6*time.Second, time.Second
	got := replay(rev, steps)
	var recs []int32
	for _, o := range got {
		recs = append(recs, o.Recommended)
	}
	want := []int32{4, 4, 4, 4, 4, 4, 4, 3, 2, 2, 2, 2, 2, 2, 2, 2}
	if diff := cmp.Diff(want, recs); diff != "" {
		t.Errorf("recommendations (-want +got):\n%s", diff)
	}
}

func TestActivationTimeout(t *testing.T) {
	rev := knativeDefaults()
	rev.MinScale = 0
	// Traffic arrives but no pod ever becomes ready.
	got := replay(rev, constant(0, 640, step{conc: 0, noMetric: true}))
	want := []out{
		{T: 630, Recommended: -1, Desired: 1, EBC: -111, Activator: true, State: activating},
		{T: 632, Recommended: -1, Desired: 0, EBC: -111, Activator: true, State: inactive},
	}
	if diff := cmp.Diff(want, pick(got, 630, 632)); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}

func TestPoke(t *testing.T) {
	// At zero (recommendation 0), a request at an odd second decides at once.
	rev := knativeDefaults()
	steps := append(constant(0, 80, step{conc: 0, ready: 1}), step{t: 81, conc: 1, ready: 0})
	got := replay(rev, steps)
	last := got[len(got)-1]
	if last.T != 81 || last.Recommended != 1 || last.Desired != 1 {
		t.Errorf("last decision %+v, want a poke at 81 recommending and applying 1", last)
	}
}

func TestInitialScale(t *testing.T) {
	rev := knativeDefaults()
	rev.InitialScale, rev.InitialReplicas = 3, 3
	// No metric yet, pods come up one by one: held at 3 until 3 are ready.
	got := replay(rev, []step{{t: 0, noMetric: true, ready: 0}, {t: 2, conc: 0, ready: 1}, {t: 4, conc: 0, ready: 3}, {t: 6, conc: 0, ready: 3}})
	want := []out{
		{T: 0, Recommended: -1, Desired: 3, EBC: 89, Activator: true, State: activating},
		{T: 2, Recommended: 0, Desired: 3, EBC: -111, Activator: true, State: activating},
		{T: 4, Recommended: 1, Desired: 1, EBC: 89, Activator: false, State: active},
		{T: 6, Recommended: 1, Desired: 1, EBC: 89, Activator: false, State: active},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}

func hasCode(rs []Reason, c Code) bool {
	for _, r := range rs {
		if r.Code == c {
			return true
		}
	}
	return false
}

func TestEveryReasonHasASentence(t *testing.T) {
	codes := []Code{NoData, StableTarget, PanicTarget, ScaleUpRateLimited, ScaleDownRateLimited,
		ActivationScale, PanicEntered, PanicExited, PanicHold, ScaleDownDelayed, NoMetricsYet,
		MinScale, InitialScale, MaxScale, ScaleToZeroDisabled, AwaitingActivation, ActivationTimeout,
		StableWindowHold, Deactivated, PodRetention, GracePeriod, ScaledToZero, ActivatorNoReadyPods,
		ActivatorScaleUnknown, ActivatorBurstCapacity, ActivatorOutOfPath, StateChanged,
		ScaleUpStabilized, ScaleDownStabilized, ScaleUpLimit, ScaleDownLimit, TooManyReplicas, TooFewReplicas,
		MetricReplicas, WithinTolerance, PodsRebalanced, DirectionFlip, FailedGetPodsMetric, FailedGetResourceMetric,
		ScaleDownBlocked, MetricsUnavailable, ActivatorNotNeeded, LearnedFallback, PreWarm, KeepAlive, LearnedRelease}
	for _, c := range codes {
		if m := (Reason{Code: c}).Message(); m == string(c) || m == "" {
			t.Errorf("reason %s has no sentence", c)
		}
	}
}

func BenchmarkDecide(b *testing.B) {
	rev := knativeDefaults()
	d := New(rev, at(0), 3)
	b.ReportAllocs()
	for i := range b.N {
		now := at(int64(i))
		d.Record(now, 150+float64(i%7), 200)
		_ = d.Decide(Input{Now: now, Ready: 3, Reachable: true})
	}
}

// TestScaleDownFloorNeverScalesUp: the scale-down rate limit holds a
// count up, it never raises it. Idle at rate 2, 8 ready gives a floor of
// 4 and a scale to 4; the next ready count (10: pods that were starting,
// or being removed and not seen so yet) gives a floor of 5, which must
// not scale back up. Before the floor was capped, that was "scaled from
// 4 to 5" with reason ScaleDownRateLimited.
func TestScaleDownFloorNeverScalesUp(t *testing.T) {
	rev := knativeDefaults()
	rev.MaxScaleDownRate = 2
	rev.PanicThreshold = 1000 // stay out of panic
	// 10 ready and busy, then idle; the ready count falls behind the scale.
	steps := constant(0, 60, step{conc: 100, ready: 10})
	for t := int64(62); t <= 200; t++ {
		ready := int32(8)
		if t%4 == 0 {
			ready = 10
		}
		steps = append(steps, step{t: t, conc: 0, ready: ready})
	}
	got := replay(rev, steps)
	prev := int32(-1)
	for _, o := range got {
		if o.T < 62 {
			prev = o.Desired
			continue
		}
		if o.Desired > prev {
			t.Fatalf("t=%d: idle, the scale went up from %d to %d (decisions %+v)", o.T, prev, o.Desired, got)
		}
		prev = o.Desired
	}
	if prev >= 10 {
		t.Errorf("never scaled down from 10: last desired %d", prev)
	}
}
