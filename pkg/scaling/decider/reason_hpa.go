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
	// at the lowest recent recommendation (wanted, held, window seconds).
	ScaleUpStabilized Code = "ScaleUpStabilized"
	// ScaleDownStabilized: the scale-down stabilization window held the
	// count at the highest recent recommendation (wanted, held,
	// window seconds; Detail "legacy" on the HPA's legacy path).
	ScaleDownStabilized Code = "ScaleDownStabilized"
	// ScaleUpLimit: the scaleUp policies (or, on the legacy path, the cap
	// max(2×current, 4)) allow no more (wanted, allowed, current;
	// Detail=selectPolicy, "" on the legacy path).
	ScaleUpLimit Code = "ScaleUpLimit"
	// ScaleDownLimit: the scaleDown policies allow no fewer (wanted,
	// allowed, current; Detail=selectPolicy).
	ScaleDownLimit Code = "ScaleDownLimit"
	// TooManyReplicas: capped at the HPA's maximum (wanted, max; Detail
	// "bounds" when the current count was above it and no metric was read).
	TooManyReplicas Code = "TooManyReplicas"
	// TooFewReplicas: raised to the HPA's minimum (wanted, min; Detail
	// "bounds" when the current count was below it and no metric was read).
	TooFewReplicas Code = "TooFewReplicas"
)

// Reasons of the HPA class's metrics. Detail is the metric's name.
const (
	// MetricReplicas: one metric's replica count (usage: per-pod average,
	// or utilization percent for cpu and memory; target; replicas).
	MetricReplicas Code = "MetricReplicas"
	// WithinTolerance: the usage ratio lies inside the tolerance band, so
	// the metric keeps the current count (ratio, band low, band high).
	WithinTolerance Code = "WithinTolerance"
	// PodsRebalanced: pods without a sample, or unready pods on a scale-up,
	// were filled in before counting (missing, unready, new ratio).
	PodsRebalanced Code = "PodsRebalanced"
	// DirectionFlip: filling in pods turned the ratio or the count the
	// other way, so the metric keeps the current count (ratio, new ratio).
	DirectionFlip Code = "DirectionFlip"
	// FailedGetPodsMetric: concurrency or rps gave no count (1 no pods,
	// 2 no pod with a sample in the window).
	FailedGetPodsMetric Code = "FailedGetPodsMetric"
	// FailedGetResourceMetric: cpu or memory gave no count (the kind as above).
	FailedGetResourceMetric Code = "FailedGetResourceMetric"
	// ScaleDownBlocked: the metrics that could be computed want fewer pods,
	// but a metric is unavailable (proposal, current, held).
	ScaleDownBlocked Code = "ScaleDownBlocked"
	// MetricsUnavailable: no metric could be computed (current, held).
	MetricsUnavailable Code = "MetricsUnavailable"
	// ActivatorNotNeeded: the HPA class never scales to zero, so requests go
	// to the ready pods directly.
	ActivatorNotNeeded Code = "ActivatorNotNeeded"
)

func behaviorMessage(r Reason) (string, bool) {
	switch r.Code {
	case ScaleUpStabilized:
		wanted, held, windowSeconds := r.values[0], r.values[1], r.values[2]
		return "recent recommendations were lower: held at " + num(held) + " by the " + secs(windowSeconds) +
			" scale-up stabilization window (wanted " + num(wanted) + ")", true
	case ScaleDownStabilized:
		wanted, held, windowSeconds := r.values[0], r.values[1], r.values[2]
		window := "the " + secs(windowSeconds) + " scale-down stabilization window"
		if r.Detail == legacyDetail {
			window = "the legacy " + secs(windowSeconds) + " window (no behavior)"
		}
		return "recent recommendations were higher: held at " + num(held) + " by " + window + " (wanted " + num(wanted) + ")", true
	case ScaleUpLimit:
		wanted, allowed, current := r.values[0], r.values[1], r.values[2]
		if r.Detail == "" {
			return "the legacy scale-up limit max(2×" + num(current) + ", 4) allows at most " + num(allowed) + " pods; wanted " + num(wanted), true
		}
		return "the scaleUp policies (selectPolicy " + r.Detail + ") allow at most " + num(allowed) + " pods now (current " +
			num(current) + "); wanted " + num(wanted), true
	case ScaleDownLimit:
		wanted, allowed, current := r.values[0], r.values[1], r.values[2]
		return "the scaleDown policies (selectPolicy " + r.Detail + ") allow no fewer than " + num(
			allowed,
		) + " pods now (current " + num(
			current,
		) + "); wanted " + num(
			wanted,
		), true
	case TooManyReplicas:
		wanted, maxReplicas := r.values[0], r.values[1]
		if r.Detail == boundsDetail {
			return "current count " + num(wanted) + " above the maximum " + num(maxReplicas) + ": scaled to it at once, without metrics, stabilization or policies", true
		}
		return "capped from " + num(wanted) + " at the maximum of " + num(maxReplicas) + " replicas", true
	case TooFewReplicas:
		wanted, minReplicas := r.values[0], r.values[1]
		if r.Detail == boundsDetail {
			return "current count " + num(wanted) + " below the minimum " + num(minReplicas) + ": scaled to it at once, without metrics, stabilization or policies", true
		}
		return "raised from " + num(wanted) + " to the minimum of " + num(minReplicas) + " replicas", true
	}
	return "", false
}

// MetricAboveTarget reports whether r is a metric's replica count
// (MetricReplicas) whose usage is above its target.
func MetricAboveTarget(r Reason) bool {
	usage, target := r.values[0], r.values[1]
	return r.Code == MetricReplicas && target > 0 && usage > target
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
		usage, target, replicas := r.values[0], r.values[1], r.values[2]
		if utilizationName(m) {
			return m + ": utilization " + num(usage) + "% of the request against a target of " + num(target) + "% gives " + num(replicas) + " pods", true
		}
		return m + ": " + num(usage) + " per pod against a target of " + num(target) + " gives " + num(replicas) + " pods", true
	case WithinTolerance:
		ratio, low, high := r.values[0], r.values[1], r.values[2]
		return m + ": usage ratio " + num(ratio) + " is within the tolerance band [" + num(low) + ", " + num(high) + "]: keeps the current count", true
	case PodsRebalanced:
		missing, unready, newRatio := r.values[0], r.values[1], r.values[2]
		return m + ": " + num(
			missing,
		) + " pods without a sample and " + num(
			unready,
		) + " unready pods filled in (missing at the target on a scale-down, at 0 on a scale-up; unready at 0 on a scale-up): ratio " + num(
			newRatio,
		), true
	case DirectionFlip:
		ratio, newRatio := r.values[0], r.values[1]
		return m + ": filling in pods turns the ratio " + num(ratio) + " into " + num(newRatio) +
			", against the direction of the first: keeps the current count", true
	case FailedGetPodsMetric, FailedGetResourceMetric:
		kind := r.values[0]
		if kind == noRequestKind {
			name, container, _ := strings.Cut(m, noRequestSep)
			resource, _, _ := strings.Cut(name, "[")
			return name + ": no replica count: container " + strconv.Quote(container) + " has no " + resource +
				" request, and a utilization is a percentage of it: set resources.requests." + resource +
				" on the container, or give the metric an averageValue target instead", true
		}
		if kind == 1 {
			return m + ": no replica count: no pods", true
		}
		return m + ": no replica count: no pod has a sample in the window (pods might be unready)", true
	case ScaleDownBlocked:
		proposal, current := r.values[0], r.values[1]
		return "the metrics that could be computed propose " + num(
			proposal,
		) + ", below the current " + num(
			current,
		) + ", but there is no scale-down while a metric is unavailable: held", true
	case MetricsUnavailable:
		current := r.values[0]
		return "no metric could be computed: held at " + num(current), true
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
