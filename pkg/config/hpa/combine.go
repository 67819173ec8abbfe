package hpa

import "ebb.dev/ebb/pkg/behavior"

// MetricProposal is one metric's replica count for this decision, or why it
// has none.
type MetricProposal = behavior.MetricProposal

// Combined is the proposal of several metrics and whether the decision may go
// on with it.
type Combined = behavior.Combined

// Reasons of Combined.
const (
	ReasonValidMetricFound    = behavior.ReasonValidMetricFound
	ReasonFailedGetPodsMetric = behavior.ReasonFailedGetPodsMetric
	// ReasonNoMetrics: an empty proposal list. Kubernetes never meets it (an
	// HPA without metrics is defaulted to cpu at 80%); here it holds.
	ReasonNoMetrics = behavior.ReasonNoMetrics
)

// CombineRecommendations is computeReplicasForMetrics: the proposal is the
// largest over the valid metrics (on a tie the first keeps the credit, as in
// Kubernetes). A blind metric blocks a scale-down but not a scale-up or a
// hold: if every metric is blind, or some are and the largest valid proposal
// is below current, Proceed is false and the replicas stay at current
// (TestNoScaleDownOneMetricInvalid); otherwise the decision goes ahead with
// the valid metrics (TestScaleUpOneMetricInvalid) and Err still reports the
// blind ones. It is behavior.Combine.
func CombineRecommendations(current int32, proposals []MetricProposal) Combined {
	return behavior.Combine(current, proposals)
}
