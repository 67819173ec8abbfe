package main

import (
	"fmt"
	"strconv"
	"strings"

	"ebb.dev/ebb/pkg/behavior"
	"ebb.dev/ebb/pkg/config"
)

// hpaRows are the settings the HPA class runs on.
func hpaRows(r *config.Revision) [][2]string {
	maxScale := strconv.Itoa(int(r.MaxScale))
	if r.MaxScale == 0 {
		maxScale = "unlimited"
	}
	tol := behavior.ToleranceWith(r.Behavior, r.HPATolerance)
	rows := [][2]string{
		{"class", r.Class},
		{"metrics", metricsText(r.Metrics)},
		{"measured by", measuredBy(r.Metrics)},
		{"min / max replicas", fmt.Sprintf("%d / %s (the HPA class never scales to zero)", max(r.MinScale, 1), maxScale)},
		{"initial scale", strconv.Itoa(int(r.InitialReplicas))},
		{"tolerance", fmt.Sprintf("scale up %s, scale down %s", num(tol.ScaleUp), num(tol.ScaleDown))},
		{"metric window", dur(r.StableWindow) + " (per-pod averages)"},
		{"tick interval", dur(r.TickInterval)},
	}
	if r.Behavior == nil {
		return append(rows, [2]string{"behavior",
			"none: Kubernetes' legacy path (scale-down window " + dur(r.HPADownscaleStabilization) +
				" inclusive, scale-up at most max(2×current, 4) per decision)"})
	}
	return append(rows, behaviorRows(r.Behavior)...)
}

func metricsText(ms []config.MetricTarget) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		switch {
		case m.Utilization():
			parts[i] = fmt.Sprintf("%s %s%% of the request", m.Name(), num(m.Target))
		case m.Metric == config.MetricCPU:
			parts[i] = fmt.Sprintf("%s %s cores per pod", m.Name(), num(m.Target))
		case m.Metric == config.MetricMemory:
			parts[i] = fmt.Sprintf("%s %s bytes per pod", m.Name(), num(m.Target))
		default:
			parts[i] = fmt.Sprintf("%s %s per pod", m.Name(), num(m.Target))
		}
	}
	return strings.Join(parts, "; ")
}

// behaviorRows describe a behavior direction by direction; none when nil.
func behaviorRows(b *behavior.Behavior) [][2]string {
	if b == nil {
		return nil
	}
	return [][2]string{
		{"behavior scale up", rulesText(b.ScaleUp)},
		{"behavior scale down", rulesText(b.ScaleDown)},
	}
}

// rulesText writes defaulted rules: "window 0s, Max of 4 pods / 15s, 100% / 15s".
func rulesText(r *behavior.Rules) string {
	if r == nil {
		return "Kubernetes' defaults"
	}
	var s strings.Builder
	if r.StabilizationWindowSeconds != nil {
		fmt.Fprintf(&s, "stabilization window %ds, ", *r.StabilizationWindowSeconds)
	}
	if r.SelectPolicy != nil && *r.SelectPolicy == behavior.Disabled {
		s.WriteString("disabled")
	} else {
		if r.SelectPolicy != nil {
			fmt.Fprintf(&s, "%s of ", *r.SelectPolicy)
		}
		for i, p := range r.Policies {
			if i > 0 {
				s.WriteString(", ")
			}
			unit := " pods"
			switch {
			case p.Type == behavior.Percent:
				unit = "%"
			case p.Value == 1:
				unit = " pod"
			}
			fmt.Fprintf(&s, "%d%s per %ds", p.Value, unit, p.PeriodSeconds)
		}
	}
	if r.Tolerance != nil {
		fmt.Fprintf(&s, ", tolerance %s", num(*r.Tolerance))
	}
	return s.String()
}
