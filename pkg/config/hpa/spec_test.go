package hpa_test

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"ebb.dev/ebb/pkg/config/hpa"
)

// TestSpecAPIFromOutside uses the package's published API from another
// package, as its consumers do.
func TestSpecAPIFromOutside(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	res := hpa.NormalizeBehavior(hpa.BehaviorInput{
		Now: now, Current: 10, Min: 1, Max: 100, Desired: 50,
		Behavior:        &autoscalingv2.HorizontalPodAutoscalerBehavior{},
		Recommendations: []hpa.Recommendation{{At: now.Add(-time.Minute), Replicas: 10}},
		ScaleUps:        []hpa.ScaleEvent{{At: now.Add(-5 * time.Second), Change: 2}},
	})
	// Period start 10-2 = 8: max(8+4, 16) = 16.
	if res.Replicas != 16 || res.Limit != hpa.ReasonScaleUpLimit || res.Stabilized != hpa.ReasonReadyForNewScale || res.Message == "" {
		t.Errorf("NormalizeBehavior = %+v", res)
	}
	v := 20.0
	pods := []hpa.PodMetric{{Name: "a", Phase: hpa.PhaseRunning, Ready: true, Value: &v}, {Name: "b", Phase: hpa.PhasePending}}
	replicas, usage := hpa.ReplicasForPods(1, pods, 10, hpa.Tolerance{ScaleUp: 0.1, ScaleDown: 0.1})
	// 20 against 10 with a Pending pod at 0: (20+0)/2/10 = 1.0, inside the band: current.
	if replicas != 1 || usage != 20 {
		t.Errorf("ReplicasForPods = %d, %v; want 1, 20", replicas, usage)
	}
}
