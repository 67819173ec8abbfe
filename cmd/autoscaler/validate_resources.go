package main

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/manifest"
)

// resourceProblems are the HPA class's cpu and memory metrics that nothing
// can measure on a Deployment: one of a container the pod does not have
// (an error). A utilization (percent of the request) of a container
// without that request is only a warning, as Kubernetes accepts such an
// HPA: a namespace's LimitRange commonly adds the request when each pod is
// admitted; without one, the metric fails on every sync
// (FailedGetResourceMetric, ScalingActive False) and the scale is kept.
// The autoscaler reads the running pods' requests, so it shows the same
// condition live with the fix.
func resourceProblems(rev *config.Revision, d manifest.Deployment) (errs, warnings []string) {
	if rev == nil || rev.Class != config.ClassHPA {
		return nil, nil
	}
	containers := d.Object.Spec.Template.Spec.Containers
	for _, m := range rev.Metrics {
		if !m.Resource() {
			continue
		}
		res := corev1.ResourceName(m.Metric)
		found := false
		for _, c := range containers {
			if m.Container != "" && c.Name != m.Container {
				continue
			}
			found = true
			if _, ok := c.Resources.Requests[res]; !ok && m.Utilization() {
				warnings = append(warnings, fmt.Sprintf("metric %s: container %q has no resources.requests.%s, and a utilization "+
					"target is a percentage of it: unless the namespace's LimitRange gives each pod one at admission, the metric "+
					"cannot be computed and the revision keeps its scale (ScalingActive False, FailedGetResourceMetric, as "+
					"Kubernetes' HPA); set resources.requests.%s on the container, or give the metric an averageValue target "+
					"(e.g. {\"metric\": %q, \"averageValue\": %q})",
					m.Name(), c.Name, m.Metric, m.Metric, m.Metric, exampleAverage(m.Metric)))
			}
		}
		switch {
		case !found && m.Container == "":
			errs = append(errs, fmt.Sprintf("metric %s: the pod template has no container, so nothing can measure the metric; "+
				"add the app's container (with resources.requests.%s for a utilization)", m.Name(), m.Metric))
		case !found:
			errs = append(errs, fmt.Sprintf("metric %s: the pod template has no container %q; name one of its containers (%s)",
				m.Name(), m.Container, containerNames(containers)))
		}
	}
	return errs, warnings
}

func exampleAverage(metric string) string {
	if metric == config.MetricMemory {
		return "256Mi"
	}
	return "200m"
}

func containerNames(cs []corev1.Container) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = fmt.Sprintf("%q", c.Name)
	}
	return strings.Join(names, ", ")
}

// measuredBy says what measures each metric of an HPA-class revision:
// the queue-proxy sidecar for concurrency and rps, the platform for cpu
// and memory (the resource metrics API on Kubernetes, the app's processes
// locally), so that a cpu- and memory-only revision needs no sidecar.
func measuredBy(ms []config.MetricTarget) string {
	var sidecar, platform []string
	for _, m := range ms {
		if m.Resource() {
			platform = append(platform, m.Name())
		} else {
			sidecar = append(sidecar, m.Name())
		}
	}
	var parts []string
	if len(sidecar) > 0 {
		parts = append(parts, strings.Join(sidecar, ", ")+": the queue-proxy sidecar (needs it in every pod)")
	}
	if len(platform) > 0 {
		parts = append(parts, strings.Join(platform, ", ")+
			": the platform (metrics.k8s.io on Kubernetes, the app's processes locally; no sidecar needed)")
	}
	return strings.Join(parts, "; ")
}
