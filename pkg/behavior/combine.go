package behavior

import "fmt"

// MetricProposal is one metric's replica count for this decision, or why it
// has none.
type MetricProposal struct {
	// Metric describes the metric for people, e.g. "pods metric concurrency".
	Metric   string
	Replicas int32
	// Err is non-nil when the metric could not be computed this time (no
	// samples, no pods, ...): the metric is blind.
	Err error
	// FailReason is the ScalingActive reason when Err is set; empty means
	// ReasonFailedGetPodsMetric.
	FailReason string
}

// Combined is the proposal of several metrics and whether the decision may
// go on with it.
type Combined struct {
	// Proceed reports whether Desired may be normalized and applied. When it
	// is false Kubernetes ends the decision early: no normalization, no
	// recommendation stored, replicas stay as they are.
	Proceed bool
	// Desired is the largest valid proposal (current when not Proceed).
	Desired int32
	// Metric is the metric that gave Desired.
	Metric string
	// Reason is the ScalingActive reason: ValidMetricFound, or the first
	// blind metric's FailReason when Proceed is false, or NoMetrics.
	Reason string
	// Message explains the outcome to a person; when Proceed it is
	// Kubernetes' rescale reason ("<metric> above target" or "All metrics
	// below target"), empty when Desired equals current.
	Message string
	// Err reports the blind metrics, even when Proceed is true (Kubernetes
	// then scales and reports the error afterwards); nil when all are valid.
	Err error
	// Blocked is the largest valid proposal when a blind metric blocked a
	// scale-down to it (Proceed false and some metric valid); else 0.
	Blocked int32
}

// Reasons of Combined.
const (
	ReasonValidMetricFound        = "ValidMetricFound"
	ReasonFailedGetPodsMetric     = "FailedGetPodsMetric"
	reasonFailedGetResourceMetric = "FailedGetResourceMetric"
	// ReasonNoMetrics: an empty proposal list. Kubernetes never meets it (an
	// HPA without metrics is defaulted to cpu at 80%); here it holds.
	ReasonNoMetrics = "NoMetrics"
)

// Combine is computeReplicasForMetrics: the proposal is the largest over
// the valid metrics (on a tie the first keeps the credit, as in Kubernetes).
// A blind metric blocks a scale-down but not a scale-up or a hold: if every
// metric is blind, or some are and the largest valid proposal is below
// current, Proceed is false and the replicas stay at current
// (TestNoScaleDownOneMetricInvalid); otherwise the decision goes ahead with
// the valid metrics (TestScaleUpOneMetricInvalid) and Err still reports the
// blind ones.
func Combine(current int32, proposals []MetricProposal) Combined {
	if len(proposals) == 0 {
		return Combined{Desired: current, Reason: ReasonNoMetrics,
			Message: fmt.Sprintf("no metric to compute a replica count from; holding %d replicas", current)}
	}
	var (
		metric  string
		desired int32
		invalid int
		first   *MetricProposal
	)
	for i := range proposals {
		p := &proposals[i]
		if p.Err != nil {
			if first == nil {
				first = p
			}
			invalid++
			continue
		}
		if desired == 0 || p.Replicas > desired {
			desired, metric = p.Replicas, p.Metric
		}
	}
	c := Combined{Proceed: true, Desired: desired, Metric: metric, Reason: ReasonValidMetricFound}
	if first != nil {
		c.Err = fmt.Errorf("invalid metrics (%d invalid out of %d), first error is: %w", invalid, len(proposals), first.Err)
	}
	if invalid == len(proposals) || (invalid > 0 && desired < current) {
		return blocked(current, c, first, invalid == len(proposals))
	}
	c.Message = rescaleMessage(current, desired, metric)
	return c
}

// blocked is the early return of computeReplicasForMetrics. Desired becomes
// current and Metric is cleared: no metric decided.
func blocked(current int32, c Combined, first *MetricProposal, all bool) Combined {
	if all {
		c.Message = fmt.Sprintf("no metric could be computed (%v); holding %d replicas", c.Err, current)
	} else {
		c.Message = fmt.Sprintf("%s proposes %d, below current %d, but scale-down is blocked while a metric is unavailable (%v); holding %d replicas",
			c.Metric, c.Desired, current, c.Err, current)
		c.Blocked = c.Desired
	}
	c.Proceed, c.Desired, c.Metric = false, current, ""
	c.Reason = first.FailReason
	if c.Reason == "" {
		c.Reason = ReasonFailedGetPodsMetric
	}
	return c
}

// rescaleMessage is Kubernetes' rescale reason.
func rescaleMessage(current, desired int32, metric string) string {
	switch {
	case desired > current:
		return metric + " above target"
	case desired < current:
		return "All metrics below target"
	}
	return ""
}
