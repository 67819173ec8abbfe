package decider

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHPAConditions(t *testing.T) {
	type short struct{ Type, Status, Reason string }
	tests := []struct {
		name    string
		reasons []Reason
		want    []short
	}{
		{"settled", []Reason{metricReplicasReason(50, 50, 3, "cpu"), withinToleranceReason(0, 0, 0, "cpu")},
			[]short{{"AbleToScale", "True", "ReadyForNewScale"}, {"ScalingActive", "True", "ValidMetricFound"},
				{"ScalingLimited", "False", "DesiredWithinRange"}}},
		{"held by the window and capped", []Reason{metricReplicasReason(0, 0, 0, "cpu"), scaleDownStabilizedReason(2, 4, 300, ""),
			tooManyReplicasReason(12, 10, "")},
			[]short{{"AbleToScale", "True", "ScaleDownStabilized"}, {"ScalingActive", "True", "ValidMetricFound"},
				{"ScalingLimited", "True", "TooManyReplicas"}}},
		{"no metric", []Reason{failedGetResourceMetricReason(2, "cpu"), metricsUnavailableReason(3)},
			[]short{{"AbleToScale", "True", "ReadyForNewScale"}, {"ScalingActive", "False", "FailedGetResourceMetric"},
				{"ScalingLimited", "False", "DesiredWithinRange"}}},
		{"one metric of two failed: still active", []Reason{failedGetPodsMetricReason(2, "rps"),
			metricReplicasReason(0, 0, 0, "cpu"), scaleUpLimitReason(9, 4, 2, "")},
			[]short{{"AbleToScale", "True", "ReadyForNewScale"}, {"ScalingActive", "True", "ValidMetricFound"},
				{"ScalingLimited", "True", "ScaleUpLimit"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []short
			for _, c := range HPAConditions(tt.reasons) {
				if c.Message == "" {
					t.Errorf("%s has no message", c.Type)
				}
				got = append(got, short{c.Type, c.Status, c.Reason})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if c := HPAConditions([]Reason{metricReplicasReason(0, 0, 0, "cpu")})[1]; c.Message != "the HPA was able to successfully calculate a replica count from cpu" {
		t.Errorf("ValidMetricFound message %q", c.Message)
	}
}
