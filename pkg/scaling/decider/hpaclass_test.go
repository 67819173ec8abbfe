package decider

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/behavior"
	"ebb.dev/ebb/pkg/config"
)

// hpaRevision is an HPA class revision on the given metrics, with a 6s
// window so that per-pod averages settle fast.
func hpaRevision(metrics ...config.MetricTarget) *config.Revision {
	rev := knativeDefaults()
	rev.Class, rev.Metric, rev.Metrics = config.ClassHPA, metrics[0].Metric, metrics
	rev.StableWindow = 6 * time.Second
	rev.HPACPUInitializationPeriod, rev.HPAInitialReadinessDelay = behavior.CPUInitializationPeriod, behavior.InitialReadinessDelay
	rev.HPADownscaleStabilization, rev.HPATolerance = behavior.LegacyDownscaleStabilization, behavior.DefaultTolerance
	return rev
}

func conc(target float64) config.MetricTarget {
	return config.MetricTarget{Metric: config.MetricConcurrency, Target: target}
}

func f(v float64) *float64 { return &v }

// pods builds a pod list: one Running, Ready pod per value (nil: no sample).
func pods(values ...*float64) []PodSample {
	out := make([]PodSample, len(values))
	for i, v := range values {
		out[i] = PodSample{Name: string(rune('a' + i)), Ready: true, Concurrency: v}
	}
	return out
}

// hpaOut is the part of an HPA decision the tests compare.
type hpaOut struct {
	T                    int64
	Recommended, Desired int32
	Activator            bool
	State                State
	Codes                []Code
}

// runHPA feeds second by second (each with the pods of seconds[t], and
// ready = the Running, Ready pods) and returns the decisions at even seconds.
func runHPA(rev *config.Revision, ready0 int32, seconds [][]PodSample) []hpaOut {
	st := NewStepper(rev, StepperOptions{First: at(0), Ready: ready0})
	var got []hpaOut
	for t, ps := range seconds {
		ready := int32(0)
		for _, p := range ps {
			if p.Ready && p.Phase == "" {
				ready++
			}
		}
		dec, ok := st.Step(at(int64(t)), Second{Pods: ps, Ready: &ready})
		if !ok {
			continue
		}
		o := hpaOut{T: int64(t), Recommended: dec.Recommended, Desired: dec.Desired, Activator: dec.ActivatorInPath, State: dec.State}
		for _, r := range dec.Reasons() {
			o.Codes = append(o.Codes, r.Code)
		}
		got = append(got, o)
	}
	return got
}

func repeat(n int, ps []PodSample) [][]PodSample {
	out := make([][]PodSample, n)
	for i := range out {
		out[i] = ps
	}
	return out
}

func TestHPAClass(t *testing.T) {
	empty := &behavior.Behavior{}
	tests := []struct {
		name    string
		rev     func() *config.Revision
		ready0  int32
		seconds [][]PodSample
		pickT   []int64
		want    []hpaOut
	}{{
		name:   "legacy path: the cap max(2x, 4) per decision, then the load",
		rev:    func() *config.Revision { return hpaRevision(conc(10)) },
		ready0: 1, seconds: repeat(5, pods(f(100))),
		want: []hpaOut{
			{T: 0, Recommended: 10, Desired: 4, State: active, Codes: []Code{MetricReplicas, ScaleUpLimit, ActivatorNotNeeded, StateChanged}},
			{T: 2, Recommended: 10, Desired: 8, State: active, Codes: []Code{MetricReplicas, ScaleUpLimit, ActivatorNotNeeded}},
			{T: 4, Recommended: 10, Desired: 10, State: active, Codes: []Code{MetricReplicas, ActivatorNotNeeded}},
		},
	}, {
		name: "a restart with more ready pods than the initial scale cannot scale down for the 300s window",
		rev: func() *config.Revision {
			r := hpaRevision(conc(10))
			r.Behavior = empty
			return r
		},
		ready0: 4, seconds: repeat(303, pods(f(1), f(1), f(1), f(1))), pickT: []int64{0, 298, 300, 302},
		want: []hpaOut{
			{T: 0, Recommended: 1, Desired: 4, State: active, Codes: []Code{MetricReplicas, ScaleDownStabilized, ActivatorNotNeeded, StateChanged}},
			{T: 298, Recommended: 1, Desired: 4, State: active, Codes: []Code{MetricReplicas, ScaleDownStabilized, ActivatorNotNeeded}},
			{T: 300, Recommended: 1, Desired: 1, State: active, Codes: []Code{MetricReplicas, ActivatorNotNeeded}},
			{T: 302, Recommended: 1, Desired: 1, State: active, Codes: []Code{MetricReplicas, ActivatorNotNeeded}},
		},
	}, {
		name: "never below one pod; initial scale 0 jumps to the minimum without metrics",
		rev: func() *config.Revision {
			r := hpaRevision(conc(10))
			r.InitialReplicas, r.InitialScale = 0, 0
			return r
		},
		ready0: 0, seconds: [][]PodSample{{}, {}, pods(f(0))},
		want: []hpaOut{
			{T: 0, Recommended: -1, Desired: 1, Activator: true, State: activating, Codes: []Code{TooFewReplicas, ActivatorNoReadyPods}},
			{T: 2, Recommended: 0, Desired: 1, State: active, Codes: []Code{MetricReplicas, TooFewReplicas, ActivatorNotNeeded, StateChanged}},
		},
	}, {
		name:   "above max-scale: the maximum at once",
		rev:    func() *config.Revision { r := hpaRevision(conc(10)); r.MaxScale = 2; return r },
		ready0: 3, seconds: repeat(1, pods(f(10), f(10), f(10))),
		want: []hpaOut{{T: 0, Recommended: -1, Desired: 2, State: active, Codes: []Code{TooManyReplicas, ActivatorNotNeeded, StateChanged}}},
	}, {
		name: "a blind metric blocks the scale-down but not the scale-up",
		rev: func() *config.Revision {
			return hpaRevision(conc(10), config.MetricTarget{Metric: config.MetricCPU, Target: 50})
		},
		ready0: 4, seconds: append(repeat(2, pods(f(1), f(1), f(1), f(1))), repeat(8, pods(f(90), f(90), f(90), f(90)))...),
		want: []hpaOut{
			{T: 0, Recommended: -1, Desired: 4, State: active,
				Codes: []Code{MetricReplicas, FailedGetResourceMetric, ScaleDownBlocked, ActivatorNotNeeded, StateChanged}},
			// Per-pod averages over the 6s window: (1+1+90)/3 = 30.667 → ceil(3.0667 × 4) = 13, capped at max(2×4, 4);
			// 272/5 = 54.4 → 22, capped at 16; (1+5×90)/6 = 75.167 → 31; then 90 → 36.
			{T: 2, Recommended: 13, Desired: 8, State: active, Codes: []Code{MetricReplicas, FailedGetResourceMetric, ScaleUpLimit, ActivatorNotNeeded}},
			{T: 4, Recommended: 22, Desired: 16, State: active, Codes: []Code{MetricReplicas, FailedGetResourceMetric, ScaleUpLimit, ActivatorNotNeeded}},
			{T: 6, Recommended: 31, Desired: 31, State: active, Codes: []Code{MetricReplicas, FailedGetResourceMetric, ActivatorNotNeeded}},
			{T: 8, Recommended: 36, Desired: 36, State: active, Codes: []Code{MetricReplicas, FailedGetResourceMetric, ActivatorNotNeeded}},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := runHPA(tc.rev(), tc.ready0, tc.seconds)
			if tc.pickT != nil {
				var picked []hpaOut
				for _, o := range got {
					for _, pt := range tc.pickT {
						if o.T == pt {
							picked = append(picked, o)
						}
					}
				}
				got = picked
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decisions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHPAUnreadyAndMissingPods: the replica calculator's conservative pass
// through the decider: a Pending pod counts as 0 on a scale-up, a pod
// without a sample at the target on a scale-down.
func TestHPAUnreadyAndMissingPods(t *testing.T) {
	pending := PodSample{Name: "p", Phase: "Pending"}
	tests := []struct {
		name    string
		current int32
		ps      []PodSample
		want    int32
		code    Code
	}{
		// 2 pods at 11.5 against 10: ratio 1.15. The Pending pod at 0 makes
		// it 23/3/10 = 0.767, the other side of 1: the count stays.
		{"scale-up with a pending pod: the direction flips", 2, append(pods(f(11.5), f(11.5)), pending), 2, DirectionFlip},
		{"scale-up without it: ceil(1.15 × 2)", 2, pods(f(11.5), f(11.5)), 3, MetricReplicas},
		// 2 pods at 2, one without a sample, taken at the target 10:
		// 14/3 = 4.667, ratio 0.467 × 3 = 1.4: 2 (without it: 1).
		{"scale-down with a missing pod", 3, pods(f(2), f(2), nil), 2, PodsRebalanced},
		{"scale-down without it", 3, pods(f(2), f(2)), 1, MetricReplicas},
		// 8.5 and 8.5: ratio 0.85; with the missing pod at 10, 0.9: inside the band.
		{"a missing pod pulls the ratio into the band", 3, pods(f(8.5), nil, f(8.5)), 3, WithinTolerance},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rev := hpaRevision(conc(10))
			rev.Behavior = &behavior.Behavior{ScaleDown: &behavior.Rules{StabilizationWindowSeconds: ptrTo(int32(0))}}
			st := NewStepper(rev, StepperOptions{First: at(0), Ready: tc.current})
			three := int32(3)
			dec, _ := st.Step(at(0), Second{Pods: tc.ps, Ready: &three})
			if dec.Desired != tc.want || !hasCode(dec.Reasons(), tc.code) {
				t.Errorf("desired %d with %v, want %d with %s", dec.Desired, reasonCodes(dec), tc.want, tc.code)
			}
		})
	}
}

// TestHPACPUReadiness: a pod still initializing counts for cpu only once it
// is Ready and a full window has passed since its Ready condition changed.
func TestHPACPUReadiness(t *testing.T) {
	rev := hpaRevision(config.MetricTarget{Metric: config.MetricCPU, Target: 50})
	rev.Behavior = &behavior.Behavior{}
	st := NewStepper(rev, StepperOptions{First: at(0), Ready: 2})
	hot := []PodSample{{Name: "a", Ready: true, CPU: f(100)}, {Name: "b", Ready: true, CPU: f(100)}}
	var decs []Decision
	for s := int64(0); s <= 8; s++ {
		two := int32(2)
		if dec, ok := st.Step(at(s), Second{Pods: hot, Ready: &two}); ok {
			decs = append(decs, dec)
		}
	}
	// Until t=6 both pods became Ready less than a 6s window ago: unready,
	// no sample counts, the metric is blind and the count holds at 2.
	if d := decs[2]; d.Desired != 2 || !hasCode(d.Reasons(), FailedGetResourceMetric) {
		t.Errorf("t=4: desired %d, reasons %v; want 2 and FailedGetResourceMetric", d.Desired, reasonCodes(d))
	}
	// At t=6 they count: 100% against 50% on 2 pods gives 4.
	if d := decs[3]; d.Desired != 4 || d.Recommended != 4 {
		t.Errorf("t=6: %d/%d, want 4/4; reasons %v", d.Recommended, d.Desired, reasonCodes(d))
	}
}

func TestHPAToleranceFromBehavior(t *testing.T) {
	for _, tc := range []struct {
		name string
		tol  *float64
		want int32
	}{{"default 0.1: 1.05 holds", nil, 4}, {"scaleUp tolerance 0.01: 1.05 scales", f(0.01), 5}} {
		t.Run(tc.name, func(t *testing.T) {
			rev := hpaRevision(conc(10))
			rev.Behavior = &behavior.Behavior{ScaleUp: &behavior.Rules{Tolerance: tc.tol}}
			got := runHPA(rev, 4, repeat(1, pods(f(10.5), f(10.5), f(10.5), f(10.5))))
			if got[0].Desired != tc.want {
				t.Errorf("desired %d, want %d (%v)", got[0].Desired, tc.want, got[0].Codes)
			}
		})
	}
}

func TestDerivePods(t *testing.T) {
	got := derivePods(30, 9, 3)
	if len(got) != 3 || got[2].Name != "pod-3" || *got[0].Concurrency != 10 || *got[1].RPS != 3 || !got[2].Ready {
		t.Errorf("DerivePods(30, 9, 3) = %+v", got)
	}
	if got := derivePods(5, 5, 0); got == nil || len(got) != 0 {
		t.Errorf("DerivePods with no ready pod = %#v, want an empty, non-nil list", got)
	}
}

func reasonCodes(d Decision) []Code {
	var cs []Code
	for _, r := range d.Reasons() {
		cs = append(cs, r.Code)
	}
	return cs
}

func ptrTo[T any](v T) *T { return &v }

// The config-autoscaler hpa- keys reach the decision: the cluster
// tolerance, the legacy scale-down window and the cpu initialization
// period.
func TestHPAControllerKeys(t *testing.T) {
	t.Run("hpa-tolerance 0.01: 1.05 scales", func(t *testing.T) {
		rev := hpaRevision(conc(10))
		rev.HPATolerance = 0.01
		got := runHPA(rev, 4, repeat(1, pods(f(10.5), f(10.5), f(10.5), f(10.5))))
		if got[0].Desired != 5 {
			t.Errorf("desired %d, want 5 (%v)", got[0].Desired, got[0].Codes)
		}
	})
	t.Run("hpa-downscale-stabilization 10s", func(t *testing.T) {
		rev := hpaRevision(conc(10))
		rev.HPADownscaleStabilization = 10 * time.Second
		// 4 pods at 10 for 8 s, then at 2: the 6 s averages recommend 4
		// up to t=8, then 3 at t=10; the inclusive 10 s window holds 4
		// through t=18 and lets it go at t=20 (with the default 5 m it
		// would hold for the whole run).
		in := append(repeat(8, pods(f(10), f(10), f(10), f(10))), repeat(14, pods(f(2), f(2), f(2), f(2)))...)
		got := runHPA(rev, 4, in)
		var downAt int64 = -1
		for _, o := range got {
			if o.Desired < 4 && downAt < 0 {
				downAt = o.T
			}
		}
		if downAt != 20 {
			t.Errorf("scaled down at t=%d, want t=20 (the last recommendation of 4 at t=8, a 10s window, inclusive)", downAt)
		}
	})
	t.Run("hpa-cpu-initialization-period 0: Ready pods count at once", func(t *testing.T) {
		rev := hpaRevision(config.MetricTarget{Metric: config.MetricCPU, Target: 50})
		rev.HPACPUInitializationPeriod = 0
		hot := []PodSample{{Name: "a", Ready: true, CPU: f(100)}, {Name: "b", Ready: true, CPU: f(100)}}
		got := runHPA(rev, 2, repeat(1, hot))
		if got[0].Desired != 4 {
			t.Errorf("desired %d, want 4 (%v)", got[0].Desired, got[0].Codes)
		}
	})
}

// Live platforms give each pod's containers: usage and requests. The
// decider computes each metric from them: a utilization of the summed
// requests, an average value, or one container's.
func TestHPAResourceFromContainers(t *testing.T) {
	// Two pods, each an app (0.1 core requested) and a sidecar (0.05).
	pod := func(name string, app, side float64) PodSample {
		return PodSample{Name: name, Ready: true, Containers: []ContainerSample{
			{Name: "app", CPU: f(app), CPURequest: 0.1, Memory: f(64 << 20), MemoryRequest: 128 << 20},
			{Name: "sidecar", CPU: f(side), CPURequest: 0.05, Memory: f(16 << 20)},
		}}
	}
	hot := []PodSample{pod("a", 0.2, 0.01), pod("b", 0.2, 0.01)}
	tests := []struct {
		name   string
		metric config.MetricTarget
		want   int32 // the recommendation, before the legacy scale-up limit
		code   Code
	}{
		// (0.21 / 0.15) = 140% of the pod's requests against 50%: ceil(2 × 2.8) = 6.
		{"pod utilization", config.MetricTarget{Metric: config.MetricCPU, Target: 50}, 6, MetricReplicas},
		// The app alone: 200% against 50%: 8.
		{"container utilization", config.MetricTarget{Metric: config.MetricCPU, Target: 50, Container: "app"}, 8, MetricReplicas},
		// 0.21 cores per pod against 0.1: ceil(2 × 2.1) = 5.
		{"average value", config.MetricTarget{Metric: config.MetricCPU, Target: 0.1, AverageValue: true}, 5, MetricReplicas},
		// The sidecar has no memory request: the whole metric fails.
		{"pod memory utilization, a container without a request", config.MetricTarget{Metric: config.MetricMemory, Target: 50}, 2, FailedGetResourceMetric},
		// The app's memory: 50% of its request, on target.
		{"container memory utilization", config.MetricTarget{Metric: config.MetricMemory, Target: 50, Container: "app"}, 2, WithinTolerance},
		{"a container not in the pod: missing", config.MetricTarget{Metric: config.MetricCPU, Target: 50, Container: "nope"}, 2, FailedGetResourceMetric},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rev := hpaRevision(tt.metric)
			rev.HPACPUInitializationPeriod = 0
			got := runHPA(rev, 2, repeat(1, hot))
			rec := got[0].Recommended
			if rec < 0 {
				rec = got[0].Desired // no recommendation: the count held
			}
			if rec != tt.want || !slices.Contains(got[0].Codes, tt.code) {
				t.Errorf("recommended %d with %v, want %d with %s", rec, got[0].Codes, tt.want, tt.code)
			}
		})
	}
}

func TestHPAMissingRequestMessage(t *testing.T) {
	rev := hpaRevision(config.MetricTarget{Metric: config.MetricMemory, Target: 50})
	st := NewStepper(rev, StepperOptions{First: at(0), Ready: 1})
	one := int32(1)
	dec, ok := st.Step(at(0), Second{Ready: &one, Pods: []PodSample{{Name: "a", Ready: true,
		Containers: []ContainerSample{{Name: "app", Memory: f(1)}}}}})
	if !ok {
		t.Fatal("no decision at t=0")
	}
	want := `memory: no replica count: container "app" has no memory request, and a utilization is a percentage of it: ` +
		`set resources.requests.memory on the container, or give the metric an averageValue target instead`
	var got []string
	for _, r := range dec.Reasons() {
		got = append(got, r.Message())
	}
	if !slices.Contains(got, want) {
		t.Errorf("reasons %q\ndo not contain %q", got, want)
	}
}

// A container's usage or request out of bounds (NaN, negative, huge) never
// reaches the windows: a usage is dropped (the pod is missing), a request
// is taken as none; the caller's samples stay as they were.
func TestHPAContainersOutOfBounds(t *testing.T) {
	rev := hpaRevision(config.MetricTarget{Metric: config.MetricCPU, Target: 50, AverageValue: false})
	rev.HPACPUInitializationPeriod = 0
	in := []PodSample{{Name: "a", Ready: true, Containers: []ContainerSample{{Name: "app", CPU: f(math.NaN()), CPURequest: 0.1}}},
		{Name: "b", Ready: true, Containers: []ContainerSample{{Name: "app", CPU: f(0.1), CPURequest: math.Inf(1)}}}}
	got := runHPA(rev, 2, repeat(1, in))
	if !slices.Contains(got[0].Codes, FailedGetResourceMetric) {
		t.Errorf("codes %v, want FailedGetResourceMetric (b has no usable request)", got[0].Codes)
	}
	if !math.IsNaN(*in[0].Containers[0].CPU) || !math.IsInf(in[1].Containers[0].CPURequest, 1) {
		t.Errorf("the caller's samples changed: %+v", in)
	}
}
