package hpa

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var errBlind = errors.New("no samples")

func TestCombineRecommendations(t *testing.T) {
	ok := func(metric string, replicas int32) MetricProposal {
		return MetricProposal{Metric: metric, Replicas: replicas}
	}
	blind := MetricProposal{Metric: "pods metric rps", Err: errBlind}
	type view struct {
		Proceed bool
		Desired int32
		Metric  string
		Reason  string
		Message string
		Blind   bool // Err reports a blind metric
	}
	tests := []struct {
		name      string
		current   int32
		proposals []MetricProposal
		want      view
	}{
		{"largest wins", 4, []MetricProposal{ok("a", 3), ok("b", 5), ok("c", 4)},
			view{true, 5, "b", ReasonValidMetricFound, "b above target", false}},
		{"on a tie the first keeps the credit", 4, []MetricProposal{ok("a", 5), ok("b", 5)},
			view{true, 5, "a", ReasonValidMetricFound, "a above target", false}},
		{"a proposal of 0 gives way to the next, as in Kubernetes", 4, []MetricProposal{ok("a", 0), ok("b", 0)},
			view{true, 0, "b", ReasonValidMetricFound, "All metrics below target", false}},
		{"all below", 5, []MetricProposal{ok("a", 2), ok("b", 3)},
			view{true, 3, "b", ReasonValidMetricFound, "All metrics below target", false}},
		{"hold", 3, []MetricProposal{ok("a", 3)},
			view{true, 3, "a", ReasonValidMetricFound, "", false}},
		{"a blind metric does not block a scale-up", 3, []MetricProposal{blind, ok("cpu", 4)},
			view{true, 4, "cpu", ReasonValidMetricFound, "cpu above target", true}},
		{"nor a hold", 3, []MetricProposal{ok("cpu", 3), blind},
			view{true, 3, "cpu", ReasonValidMetricFound, "", true}},
		{"a blind metric blocks a scale-down", 5, []MetricProposal{ok("cpu", 2), blind},
			view{false, 5, "", ReasonFailedGetPodsMetric, "", true}},
		{"the first blind metric gives the reason", 5, []MetricProposal{{Metric: "ext", Err: errBlind, FailReason: "FailedGetExternalMetric"}, blind, ok("cpu", 2)},
			view{false, 5, "", "FailedGetExternalMetric", "", true}},
		{"all blind", 5, []MetricProposal{blind, blind},
			view{false, 5, "", ReasonFailedGetPodsMetric, "", true}},
		{"no metrics", 5, nil,
			view{false, 5, "", ReasonNoMetrics, "", false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := CombineRecommendations(tc.current, tc.proposals)
			v := view{got.Proceed, got.Desired, got.Metric, got.Reason, got.Message, errors.Is(got.Err, errBlind)}
			if !got.Proceed {
				if got.Message == "" {
					t.Errorf("a held decision must explain itself")
				}
				v.Message = ""
			}
			if diff := cmp.Diff(tc.want, v); diff != "" {
				t.Errorf("CombineRecommendations() mismatch (-want +got):\n%s\nmessage: %s", diff, got.Message)
			}
		})
	}
}

func TestCombineRecommendationsErrorText(t *testing.T) {
	got := CombineRecommendations(5, []MetricProposal{{Metric: "a", Replicas: 2}, {Metric: "b", Err: errBlind}, {Metric: "c", Err: errBlind}})
	for _, w := range []string{"invalid metrics (2 invalid out of 3), first error is: no samples"} {
		if !strings.Contains(got.Err.Error(), w) {
			t.Errorf("Err = %q, want it to contain %q", got.Err, w)
		}
	}
	for _, w := range []string{"a proposes 2, below current 5", "scale-down is blocked", "holding 5 replicas"} {
		if !strings.Contains(got.Message, w) {
			t.Errorf("Message = %q, want it to contain %q", got.Message, w)
		}
	}
}
