package behavior

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func f64(v float64) *float64 { return &v }

func running(values ...float64) []PodMetric {
	out := make([]PodMetric, len(values))
	for i, v := range values {
		out[i] = PodMetric{Phase: PhaseRunning, Ready: true, Value: f64(v)}
	}
	return out
}

var def = Tolerance{ScaleUp: 0.1, ScaleDown: 0.1}

// TestReplicasUtilization mirrors Kubernetes' resource utilization cases
// (replica_calculator_test.go) with per-pod percentages of equal requests.
func TestReplicasUtilization(t *testing.T) {
	type result struct {
		Replicas int32
		Usage    float64
		Rule     Rule
	}
	missing := PodMetric{Phase: PhaseRunning, Ready: true}
	pending := PodMetric{Phase: PhasePending}
	tests := []struct {
		name    string
		current int32
		pods    []PodMetric
		target  float64
		tol     Tolerance
		want    result
	}{
		// TestReplicaCalcScaleUp: 300/500/700m of 1000m requests against 30%.
		{"scale up", 3, running(30, 50, 70), 30, def, result{5, 50, ruleScaled}},
		// TestReplicaCalcScaleDown: 100/300/500/250/250 of 1000 against 50%: 28% → ceil(0.56 × 5) = 3.
		{"scale down", 5, running(10, 30, 50, 25, 25), 50, def, result{3, 28, ruleScaled}},
		// TestReplicaCalcTolerance: 102% stays (1.02 within 0.1).
		{"tolerance", 3, running(102, 102, 102), 100, def, result{3, 102, RuleWithinTolerance}},
		// Utilization is truncated before the ratio: 109.9% is 109%, inside the band.
		{"utilization truncated", 3, running(109.9, 109.9, 109.9), 100, def, result{3, 109, RuleWithinTolerance}},
		// TestReplicaCalcConfigurableTolerance-like: a 0.01 scale-up tolerance scales at 102%.
		{"configurable tolerance", 3, running(102, 102, 102), 100, Tolerance{ScaleUp: 0.01, ScaleDown: 0.1}, result{4, 102, ruleScaled}},
		// Missing pods on a scale-down are at max(100%, target): 24% of 2 pods
		// with 2 missing against 100% → (24+24+100+100)/4 = 62% → 3.
		{"missing on scale-down", 4, append(running(24, 24), missing, missing), 100, def, result{3, 24, RuleRebalanced}},
		// TestReplicaCalcMissingMetricsScaleDownTargetOver100: fill at the target 120.
		{"missing over 100%", 4, append(running(40, 40), missing, missing), 120, def, result{3, 40, RuleRebalanced}},
		// Unready pods on a scale-up are at 0: 60% on 2 + a Pending pod against 30% → 40% → 4.
		{"pending on scale-up", 3, append(running(60, 60), pending), 30, def, result{4, 60, RuleRebalanced}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Replicas(tc.current, tc.pods, Target{Kind: Utilization, Value: tc.target}, tc.tol)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, result{res.Replicas, res.Usage, res.Rule}); diff != "" {
				t.Errorf("Replicas (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReplicasCPUReadiness: the cpu-only rules of groupPods.
func TestReplicasCPUReadiness(t *testing.T) {
	now := t0
	window := 30 * time.Second
	pod := func(ready bool, started, readySince time.Duration) PodMetric {
		return PodMetric{Phase: PhaseRunning, Ready: ready, Value: f64(100), Started: now.Add(-started), ReadySince: now.Add(-readySince)}
	}
	tests := []struct {
		name    string
		pod     PodMetric
		unready bool
	}{
		{"initializing, ready for a full window", pod(true, time.Minute, window), false},
		{"initializing, ready for less than a window", pod(true, time.Minute, window-time.Second), true},
		{"initializing, not ready", pod(false, time.Minute, time.Minute), true},
		{"initialized, ready", pod(true, 10*time.Minute, 10*time.Minute), false},
		{"initialized, never became ready", pod(false, 10*time.Minute, 10*time.Minute-10*time.Second), true},
		{"initialized, was ready, now not ready: counted", pod(false, 10*time.Minute, time.Minute), false},
		{"no start time", PodMetric{Phase: PhaseRunning, Ready: true, Value: f64(100), ReadySince: now}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pods := []PodMetric{tc.pod, pod(true, 10*time.Minute, 10*time.Minute)}
			res, err := Replicas(2, pods, Target{Kind: Utilization, Value: 50, CPU: true, Now: now, Window: window,
				InitializationPeriod: CPUInitializationPeriod, ReadinessDelay: InitialReadinessDelay}, def)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Unready == 1; got != tc.unready {
				t.Errorf("unready = %v, want %v (%+v)", got, tc.unready, res)
			}
		})
	}
	// Memory ignores readiness: the same pod that is unready for cpu counts.
	res, _ := Replicas(2, []PodMetric{pod(false, time.Minute, time.Minute)}, Target{Kind: Utilization, Value: 50}, def)
	if res.Unready != 0 || res.Ready != 1 {
		t.Errorf("memory: %+v, want the not-ready pod counted", res)
	}
}

func TestReplicasErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pods   []PodMetric
		target Target
		want   error
	}{
		{"no pods", nil, Target{Value: 1}, ErrNoPods},
		{"utilization target below 1%", running(5), Target{Kind: Utilization, Value: 0}, ErrInvalidTarget},
		{"only pending", []PodMetric{{Phase: PhasePending}}, Target{Value: 1}, ErrNoSamples},
	} {
		if _, err := Replicas(3, tc.pods, tc.target, def); !errors.Is(err, tc.want) {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.want)
		}
	}
}
