// Command configdocs writes docs/configuration.md from pkg/config's key and
// annotation tables, so the reference cannot drift from the code:
//
//	go run ./hack/configdocs > docs/configuration.md
//
// A test fails when the committed file differs from what this prints.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"ebb.dev/ebb/pkg/config"
)

func main() {
	if err := write(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "configdocs:", err)
		os.Exit(1)
	}
}

func write(w io.Writer) error {
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("\n## `config-autoscaler` keys\n\n")
	b.WriteString("| key | type | default | valid | per-revision override | meaning |\n|---|---|---|---|---|---|\n")
	for _, k := range config.Keys() {
		override := "none"
		if k.Override != "" {
			override = "`" + k.Override + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s | %s | %s |\n", k.Name, k.Type, k.Default, cell(k.Rule), override, cell(k.Doc))
	}
	b.WriteString("\n## Revision annotations\n\n")
	b.WriteString("Put them on the Deployment's pod template (`spec.template.metadata.annotations`).\n")
	b.WriteString("Legacy camelCase spellings are read when the kebab-case key is absent.\n\n")
	b.WriteString("| annotation | legacy alias | type | when absent | valid | meaning |\n|---|---|---|---|---|---|\n")
	for _, a := range config.Annotations() {
		alias := "—"
		if len(a.Aliases) > 0 {
			alias = "`" + strings.Join(a.Aliases, "`, `") + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", a.Key, alias, a.Type, cell(a.Default), cell(a.Rule), cell(a.Doc))
	}
	b.WriteString(hpaSection)
	_, err := io.WriteString(w, b.String())
	return err
}

// hpaSection says how the HPA class measures cpu and memory and where it
// differs from Kubernetes' HPA controller.
const hpaSection = `
## The HPA class on cpu and memory

A revision with ` + "`autoscaling.knative.dev/class: hpa.autoscaling.knative.dev`" + ` runs Kubernetes'
HorizontalPodAutoscaler algorithm. Its ` + "`cpu`" + ` and ` + "`memory`" + ` metrics are measured by the platform,
not by the queue-proxy:

- **Kubernetes**: the resource metrics API (` + "`metrics.k8s.io/v1beta1`" + ` PodMetrics, served by metrics-server),
  one List per namespace every 15s. A pod it does not list, or whose entry lacks a container or the
  resource, is missing, and Kubernetes' missing-pod rules apply (counted at the target on a scale-down,
  at 0 on a scale-up).
- **Local**: each replica's app process tree, once a second: cgroup v2 (` + "`cpu.stat`" + ` usage_usec,
  ` + "`memory.current`" + ` minus ` + "`inactive_file`" + `) when the replica runs in a cgroup of its own, else
  ` + "`/proc`" + ` (utime+stime of the process and its descendants, VmRSS).

A utilization target is a percentage of the container's ` + "`resources.requests`" + `, as each running pod has
it (on Kubernetes the pods' own, which a namespace's LimitRange may have set at admission). As in
Kubernetes, a revision whose container has none is valid (` + "`autoscaler validate`" + ` warns, naming the
container); while a pod lacks it the metric cannot be computed, the revision keeps its scale, and its
status shows ScalingActive False, FailedGetResourceMetric, with the container and the fix. An ` + "`averageValue`" + ` target
(` + "`{\"metric\": \"cpu\", \"averageValue\": \"200m\"}`" + `) needs none. ` + "`container`" + ` reads one container only
(Kubernetes' ContainerResource metric). The pods' states reach the calculation live: Pending pods,
unready pods, start times and Ready transitions, so the cpu initialization period and the initial
readiness delay apply (keys ` + "`hpa-cpu-initialization-period`" + `, ` + "`hpa-initial-readiness-delay`" + `).

A Deployment whose pod template has no ` + "`queue-proxy`" + ` container is *sidecarless* on Kubernetes: Ebb
owns none of its Services and only scales it; it never scales to zero (the HPA class's minimum is 1).
concurrency and rps metrics need the sidecar; ` + "`autoscaler validate`" + ` says which metric is measured by what.

Where Ebb differs from Kubernetes' HPA controller:

- **Decisions every tick** (` + "`tick-interval`" + `, 2s), not every 15s: scaling policies and the legacy
  cap max(2×current, 4) apply per decision, so a scale-up can reach its cap sooner.
- **Per-pod values are averaged over the stable window** (` + "`stable-window`" + `, 60s by default) before the
  calculation; metrics-server's own window is about 15s. The usage reported is that average.
- **Utilization averages the pods' percentages**; Kubernetes divides the summed usage by the summed
  requests. They differ only when pods' requests differ (during a rollout).
- **Requests come from the Deployment's pod template**, not from each pod's spec.
- **` + "`hpa-downscale-stabilization`" + ` applies where no ` + "`autoscaling.ebb.dev/behavior`" + ` is given**; a behavior
  whose scaleDown window is unset takes 300s, as the API default, not the key.
- **The CPU sample's own timestamp is not read**: the cpu initialization rule compares the pod's Ready
  transition with Ebb's window instead of the metrics API's sample window.
- **Events**: a rescale is a Normal ` + "`SuccessfulRescale`" + ` Event on the Deployment ("New size: N; reason: …");
  a metric no count could come from is a Warning Event with Kubernetes' reason (` + "`FailedGetResourceMetric`" + `,
  ` + "`FailedGetPodsMetric`" + `), sent when it changes and repeated at most once a minute while it lasts.
- **Conditions** (AbleToScale, ScalingActive, ScalingLimited) are shown by ` + "`autoscaler status`" + `,
  ` + "`autoscaler explain`" + `, the decisions API and the dashboard, not written to an HPA object (there is none).
`

// cell escapes what would break a Markdown table cell.
func cell(s string) string {
	if s == "" {
		return "—"
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

const header = `# Configuration reference

<!-- Generated by "go run ./hack/configdocs > docs/configuration.md"; do not edit. -->

Ebb is configured with Knative's own names: the ` + "`config-autoscaler`" + ` ConfigMap
tunes every revision, and annotations on a revision's pod template override
it per revision. Ebb's own extensions use the prefix ` + "`autoscaling.ebb.dev/`" + `.

An invalid value is never silently replaced by a default: ` + "`autoscaler validate`" + `
and the autoscaler report every problem at once, each naming the key, the value,
the rule and the fix. A running autoscaler keeps its last good configuration
when a change is invalid.

The commented ` + "`_example`" + ` block of ` + "`deploy/config-autoscaler.yaml`" + ` documents
the same keys; a test checks that it parses to exactly the defaults below.
`
