package decider

import (
	"strconv"
	"strings"

	"ebb.dev/ebb/pkg/config"
)

// Reasons of a behavior (autoscaling.ebb.dev/behavior on either class, and
// the HPA class's normalization): Kubernetes' condition reasons.
const (
	// ScaleUpStabilized: the scale-up stabilization window held the count
	// at the lowest recent recommendation (A=wanted, B=held, C=window seconds).
	ScaleUpStabilized Code = "ScaleUpStabilized"
	// ScaleDownStabilized: the scale-down stabilization window held the
	// count at the highest recent recommendation (A=wanted, B=held,
	// C=window seconds; Detail "legacy" on the HPA's legacy path).
	ScaleDownStabilized Code = "ScaleDownStabilized"
	// ScaleUpLimit: the scaleUp policies (or, on the legacy path, the cap
	// max(2×current, 4)) allow no more (A=wanted, B=allowed, C=current;
	// Detail=selectPolicy, "" on the legacy path).
	ScaleUpLimit Code = "ScaleUpLimit"
	// ScaleDownLimit: the scaleDown policies allow no fewer (A=wanted,
	// B=allowed, C=current; Detail=selectPolicy).
	ScaleDownLimit Code = "ScaleDownLimit"
	// TooManyReplicas: capped at the HPA's maximum (A=wanted, B=max; Detail
	// "bounds" when the current count was above it and no metric was read).
	TooManyReplicas Code = "TooManyReplicas"
	// TooFewReplicas: raised to the HPA's minimum (A=wanted, B=min; Detail
	// "bounds" when the current count was below it and no metric was read).
	TooFewReplicas Code = "TooFewReplicas"
)

// Reasons of the HPA class's metrics. Detail is the metric's name.
const (
	// MetricReplicas: one metric's replica count (A=usage: per-pod average,
	// or utilization percent for cpu and memory; B=target; C=replicas).
	MetricReplicas Code = "MetricReplicas"
	// WithinTolerance: the usage ratio lies inside the tolerance band, so
	// the metric keeps the current count (A=ratio, B=band low, C=band high).
	WithinTolerance Code = "WithinTolerance"
	// PodsRebalanced: pods without a sample, or unready pods on a scale-up,
	// were filled in before counting (A=missing, B=unready, C=new ratio).
	PodsRebalanced Code = "PodsRebalanced"
	// DirectionFlip: filling in pods turned the ratio or the count the
	// other way, so the metric keeps the current count (A=ratio, B=new ratio).
	DirectionFlip Code = "DirectionFlip"
	// FailedGetPodsMetric: concurrency or rps gave no count (A=1 no pods,
	// 2 no pod with a sample in the window).
	FailedGetPodsMetric Code = "FailedGetPodsMetric"
	// FailedGetResourceMetric: cpu or memory gave no count (A as above).
	FailedGetResourceMetric Code = "FailedGetResourceMetric"
	// ScaleDownBlocked: the metrics that could be computed want fewer pods,
	// but a metric is unavailable (A=proposal, B=current, held).
	ScaleDownBlocked Code = "ScaleDownBlocked"
	// MetricsUnavailable: no metric could be computed (A=current, held).
	MetricsUnavailable Code = "MetricsUnavailable"
	// ActivatorNotNeeded: the HPA class never scales to zero, so requests go
	// to the ready pods directly.
	ActivatorNotNeeded Code = "ActivatorNotNeeded"
)

func behaviorMessage(r Reason) (string, bool) {
	switch r.Code {
	case ScaleUpStabilized:
		return "recent recommendations were lower: held at " + num(r.B) + " by the " + secs(r.C) + " scale-up stabilization window (wanted " + num(r.A) + ")", true
	case ScaleDownStabilized:
		window := "the " + secs(r.C) + " scale-down stabilization window"
		if r.Detail == legacyDetail {
			window = "the legacy " + secs(r.C) + " window (no behavior)"
		}
		return "recent recommendations were higher: held at " + num(r.B) + " by " + window + " (wanted " + num(r.A) + ")", true
	case ScaleUpLimit:
		if r.Detail == "" {
			return "the legacy scale-up limit max(2×" + num(r.C) + ", 4) allows at most " + num(r.B) + " pods; wanted " + num(r.A), true
		}
		return "the scaleUp policies (selectPolicy " + r.Detail + ") allow at most " + num(r.B) + " pods now (current " + num(r.C) + "); wanted " + num(r.A), true
	case ScaleDownLimit:
		return "the scaleDown policies (selectPolicy " + r.Detail + ") allow no fewer than " + num(
			r.B,
		) + " pods now (current " + num(
			r.C,
		) + "); wanted " + num(
			r.A,
		), true
	case TooManyReplicas:
		if r.Detail == boundsDetail {
			return "current count " + num(r.A) + " above the maximum " + num(r.B) + ": scaled to it at once, without metrics, stabilization or policies", true
		}
		return "capped from " + num(r.A) + " at the maximum of " + num(r.B) + " replicas", true
	case TooFewReplicas:
		if r.Detail == boundsDetail {
			return "current count " + num(r.A) + " below the minimum " + num(r.B) + ": scaled to it at once, without metrics, stabilization or policies", true
		}
		return "raised from " + num(r.A) + " to the minimum of " + num(r.B) + " replicas", true
	}
	return "", false
}

// utilizationName reports whether a metric's name (config.MetricTarget.Name)
// is a utilization: cpu or memory, of the pod or a container, not an
// average.
func utilizationName(name string) bool {
	resource, _, _ := strings.Cut(name, "[")
	return (resource == config.MetricCPU || resource == config.MetricMemory) && !strings.HasSuffix(name, " average")
}

func metricMessage(r Reason) (string, bool) {
	m := r.Detail
	switch r.Code {
	case MetricReplicas:
		if utilizationName(m) {
			return m + ": utilization " + num(r.A) + "% of the request against a target of " + num(r.B) + "% gives " + num(r.C) + " pods", true
		}
		return m + ": " + num(r.A) + " per pod against a target of " + num(r.B) + " gives " + num(r.C) + " pods", true
	case WithinTolerance:
		return m + ": usage ratio " + num(r.A) + " is within the tolerance band [" + num(r.B) + ", " + num(r.C) + "]: keeps the current count", true
	case PodsRebalanced:
		return m + ": " + num(
			r.A,
		) + " pods without a sample and " + num(
			r.B,
		) + " unready pods filled in (missing at the target on a scale-down, at 0 on a scale-up; unready at 0 on a scale-up): ratio " + num(
			r.C,
		), true
	case DirectionFlip:
		return m + ": filling in pods turns the ratio " + num(r.A) + " into " + num(r.B) + ", against the direction of the first: keeps the current count", true
	case FailedGetPodsMetric, FailedGetResourceMetric:
		if r.A == noRequestKind {
			name, container, _ := strings.Cut(m, noRequestSep)
			resource, _, _ := strings.Cut(name, "[")
			return name + ": no replica count: container " + strconv.Quote(container) + " has no " + resource +
				" request, and a utilization is a percentage of it: set resources.requests." + resource +
				" on the container, or give the metric an averageValue target instead", true
		}
		if r.A == 1 {
			return m + ": no replica count: no pods", true
		}
		return m + ": no replica count: no pod has a sample in the window (pods might be unready)", true
	case ScaleDownBlocked:
		return "the metrics that could be computed propose " + num(
			r.A,
		) + ", below the current " + num(
			r.B,
		) + ", but there is no scale-down while a metric is unavailable: held", true
	case MetricsUnavailable:
		return "no metric could be computed: held at " + num(r.A), true
	case ActivatorNotNeeded:
		return "activator out of the path: the HPA class never scales to zero and routes to ready pods directly", true
	}
	return "", false
}

// Details of the behavior reasons.
const (
	legacyDetail = "legacy"
	boundsDetail = "bounds"
)
