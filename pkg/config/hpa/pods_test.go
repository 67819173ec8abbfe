package hpa

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// running builds ready Running pods with the given samples; a NaN value
// means "no sample".
func running(values ...float64) []PodMetric {
	pods := make([]PodMetric, len(values))
	for i, v := range values {
		pods[i] = PodMetric{Name: "p", Phase: PhaseRunning, Ready: true}
		if !math.IsNaN(v) {
			pods[i].Value = f64(v)
		}
	}
	return pods
}

func with(pods []PodMetric, more ...PodMetric) []PodMetric { return append(pods, more...) }

var (
	missing  = math.NaN()
	pending  = PodMetric{Name: "pending", Phase: PhasePending, Value: f64(1000)}
	failed   = PodMetric{Name: "failed", Phase: PhaseFailed, Ready: true, Value: f64(1000)}
	deleting = PodMetric{Name: "deleting", Phase: PhaseRunning, Ready: true, Deleting: true, Value: f64(1000)}
)

// TestReplicasForPods mirrors replica_calculator_test.go's custom-metric
// (Pods) cases and the worked numbers of the reference digest.
func TestReplicasForPods(t *testing.T) {
	def := Tolerance{0.1, 0.1}
	type result struct {
		Replicas int32
		Usage    float64
	}
	tests := []struct {
		name    string
		current int32
		pods    []PodMetric
		target  float64
		tol     Tolerance
		want    result
	}{
		{"scale up: avg 20 against 15", 3, running(20, 10, 30), 15, def, result{4, 20}},
		{"scale down: 0.6 x 5", 5, running(12, 12, 12, 12, 12), 20, def, result{3, 12}},
		{"tolerance: 20.666 against 20 holds", 3, running(20, 21, 21), 20, def, result{3, 20.666}},
		{"scaleUp tolerance 0.01: 20.666 scales", 3, running(20, 21, 21), 20, Tolerance{ScaleUp: 0.01, ScaleDown: 0.1}, result{4, 20.666}},
		{"ratio exactly 1.1 is inside", 4, running(22, 22, 22, 22), 20, def, result{4, 22}},
		{"ratio exactly 0.9 is inside", 4, running(18, 18, 18, 18), 20, def, result{4, 18}},
		{"just above 1.1 scales", 10, running(22.001, 22.001, 22.001, 22.001, 22.001, 22.001, 22.001, 22.001, 22.001, 22.001), 20, def, result{12, 22.001}},
		{"scaleUp tolerance 0: 1% above scales", 10, running(20.2, 20.2, 20.2, 20.2, 20.2, 20.2, 20.2, 20.2, 20.2, 20.2), 20, Tolerance{0, 0.1}, result{11, 20.2}},
		{"scaleUp tolerance 2: 200% above holds", 3, running(60, 60, 60), 20, Tolerance{2, 0.1}, result{3, 60}},
		{"scaleDown tolerance 0.36: 0.64 holds (inclusive)", 5, running(12.8, 12.8, 12.8, 12.8, 12.8), 20, Tolerance{0.1, 0.36}, result{5, 12.8}},
		{"scaleDown tolerance 0.34: 0.64 scales", 5, running(12.8, 12.8, 12.8, 12.8, 12.8), 20, Tolerance{0.1, 0.34}, result{4, 12.8}},
		// Readiness is ignored for Pods metrics: a NotReady Running pod counts.
		{"not ready but running counts with its value", 3, with(running(50, 10), PodMetric{Phase: PhaseRunning, Ready: false, Value: f64(30)}), 15, def,
			result{6, 30}},
		{"Succeeded with a sample counts as ready", 3, with(running(40, 40), PodMetric{Phase: PhaseSucceeded, Value: f64(40)}), 20, def, result{6, 40}},
		// Ignored pods never count.
		{"failed and deleting pods are ignored", 3, with(running(40, 40), failed, deleting), 20, def, result{4, 40}},
		// Missing samples: at target on the way down, 0 on the way up.
		{"missing on scale-down count at target", 4, running(10, 10, missing, missing), 20, def, result{3, 10}},
		{"missing on scale-up count as 0, then within tolerance", 4, running(40, 40, missing, missing), 20, def, result{4, 40}},
		{"missing on scale-up count as 0", 4, running(60, 60, missing, missing), 20, def, result{6, 60}},
		{"missing with ratio exactly 1: nothing filled", 3, running(20, 20, missing), 20, def, result{3, 20}},
		{"direction flip: filling zeros turns up into down", 3, running(30, missing, missing), 20, def, result{3, 30}},
		{"direction flip 2: the recount moves against the ratio", 2, running(15, 15, 15, missing), 20, def, result{2, 15}},
		// Unready (Pending) pods: 0 on the way up, left out on the way down.
		{"pending pods damp a scale-up into tolerance", 10, with(running(10, 10), pending, pending, pending, pending, pending, pending, pending, pending), 2, def,
			result{10, 10}},
		{"pending pods count as 0 on the way up", 3, with(running(50, 10), pending), 15, def, result{4, 30}},
		{"pending pods are left out on the way down", 3, with(running(10, 10), pending), 20, def, result{1, 10}},
		{"the multiplier is ready pods, not current", 4, running(100), 50, def, result{2, 100}},
		{"milli arithmetic truncates the average into the band", 3, running(0.001, 0.001, 0.002), 0.001, def, result{3, 0.001}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			replicas, usage := ReplicasForPods(tc.current, tc.pods, tc.target, tc.tol)
			if diff := cmp.Diff(tc.want, result{replicas, usage}); diff != "" {
				t.Errorf("ReplicasForPods() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodsReplicasErrors(t *testing.T) {
	tests := []struct {
		name   string
		pods   []PodMetric
		target float64
		want   error
	}{
		{"no pods", nil, 10, ErrNoPods},
		{"only pending pods", []PodMetric{pending, pending}, 10, ErrNoSamples},
		{"only ignored pods", []PodMetric{failed, deleting}, 10, ErrNoSamples},
		{"no sample at all", running(missing, missing), 10, ErrNoSamples},
		{"NaN and Inf are no samples", []PodMetric{{Phase: PhaseRunning, Value: f64(math.NaN())}, {Phase: PhaseRunning, Value: f64(math.Inf(1))}}, 10, ErrNoSamples},
		{"zero target", running(1), 0, ErrInvalidTarget},
		{"negative target", running(1), -1, ErrInvalidTarget},
		{"NaN target", running(1), math.NaN(), ErrInvalidTarget},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			replicas, _, err := PodsReplicas(7, tc.pods, tc.target, Tolerance{0.1, 0.1})
			if !errors.Is(err, tc.want) {
				t.Errorf("PodsReplicas() error = %v, want %v", err, tc.want)
			}
			if replicas != 7 {
				t.Errorf("PodsReplicas() = %d on error, want current 7", replicas)
			}
			if r, _ := ReplicasForPods(7, tc.pods, tc.target, Tolerance{0.1, 0.1}); r != 7 {
				t.Errorf("ReplicasForPods() = %d on error, want current 7", r)
			}
		})
	}
}

func TestToleranceWithin(t *testing.T) {
	tol := Tolerance{ScaleUp: 0.1, ScaleDown: 0.1}
	for ratio, want := range map[float64]bool{0.9: true, 1.1: true, 1: true, 0.8999: false, 1.1001: false} {
		if got := tol.Within(ratio); got != want {
			t.Errorf("Within(%v) = %v, want %v", ratio, got, want)
		}
	}
}
