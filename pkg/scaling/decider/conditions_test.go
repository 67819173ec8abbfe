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
		{"settled", []Reason{{Code: MetricReplicas, A: 50, B: 50, C: 3, Detail: "cpu"}, {Code: WithinTolerance, Detail: "cpu"}},
			[]short{{"AbleToScale", "True", "ReadyForNewScale"}, {"ScalingActive", "True", "ValidMetricFound"},
				{"ScalingLimited", "False", "DesiredWithinRange"}}},
		{"held by the window and capped", []Reason{{Code: MetricReplicas, Detail: "cpu"}, {Code: ScaleDownStabilized, A: 2, B: 4, C: 300},
			{Code: TooManyReplicas, A: 12, B: 10}},
			[]short{{"AbleToScale", "True", "ScaleDownStabilized"}, {"ScalingActive", "True", "ValidMetricFound"},
				{"ScalingLimited", "True", "TooManyReplicas"}}},
		{"no metric", []Reason{{Code: FailedGetResourceMetric, A: 2, Detail: "cpu"}, {Code: MetricsUnavailable, A: 3}},
			[]short{{"AbleToScale", "True", "ReadyForNewScale"}, {"ScalingActive", "False", "FailedGetResourceMetric"},
				{"ScalingLimited", "False", "DesiredWithinRange"}}},
		{"one metric of two failed: still active", []Reason{{Code: FailedGetPodsMetric, A: 2, Detail: "rps"},
			{Code: MetricReplicas, Detail: "cpu"}, {Code: ScaleUpLimit, A: 9, B: 4, C: 2}},
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
	if c := HPAConditions([]Reason{{Code: MetricReplicas, Detail: "cpu"}})[1]; c.Message != "the HPA was able to successfully calculate a replica count from cpu" {
		t.Errorf("ValidMetricFound message %q", c.Message)
	}
}
