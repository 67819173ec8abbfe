package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/manifest"
	"ebb.dev/ebb/pkg/scaling/decider"
)

// writeText renders the report for people: the effective ConfigMap, one
// table per revision, every error, and a one-line verdict.
func writeText(w io.Writer, rep *validateReport) {
	writeConfigMapText(w, &rep.ConfigMap)
	for i := range rep.Revisions {
		fmt.Fprintln(w)
		writeRevisionText(w, &rep.Revisions[i])
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, verdict(rep))
}

func writeConfigMapText(w io.Writer, cm *configMapReport) {
	switch {
	case cm.origin == "" && cm.Valid:
		fmt.Fprintf(w, "%s: not given, using the defaults\n", config.ConfigMapName)
	case cm.origin == "":
		fmt.Fprintf(w, "%s: %s\n", config.ConfigMapName, status(cm.Errors))
	default:
		fmt.Fprintf(w, "%s from %s: %s\n", config.ConfigMapName, cm.origin, status(cm.Errors))
	}
	writeErrors(w, cm.Errors)
	if cm.config == nil {
		return
	}
	a := cm.config
	maxScale := strconv.Itoa(int(a.MaxScale))
	if a.MaxScale == 0 {
		maxScale += " (unlimited)"
	}
	limit := strconv.Itoa(int(a.MaxScaleLimit))
	if a.MaxScaleLimit == 0 {
		limit += " (none)"
	}
	writeTable(w, append([][2]string{
		{config.KeyEnableScaleToZero, strconv.FormatBool(a.EnableScaleToZero)},
		{config.KeyContainerConcurrencyTargetPercentage, num(a.ContainerConcurrencyTargetFraction*100) + "%"},
		{config.KeyContainerConcurrencyTargetDefault, num(a.ContainerConcurrencyTargetDefault)},
		{config.KeyRequestsPerSecondTargetDefault, num(a.RPSTargetDefault)},
		{config.KeyTargetBurstCapacity, num(a.TargetBurstCapacity)},
		{config.KeyStableWindow, dur(a.StableWindow)},
		{config.KeyPanicWindowPercentage, num(a.PanicWindowPercentage) + "%"},
		{config.KeyPanicThresholdPercentage, num(a.PanicThresholdPercentage) + "%"},
		{config.KeyMaxScaleUpRate, num(a.MaxScaleUpRate)},
		{config.KeyMaxScaleDownRate, num(a.MaxScaleDownRate)},
		{config.KeyScaleToZeroGracePeriod, dur(a.ScaleToZeroGracePeriod)},
		{config.KeyScaleToZeroPodRetentionPeriod, dur(a.ScaleToZeroPodRetentionPeriod)},
		{config.KeyScaleDownDelay, dur(a.ScaleDownDelay)},
		{config.KeyActivatorCapacity, num(a.ActivatorCapacity)},
		{config.KeyPodAutoscalerClass, a.PodAutoscalerClass},
		{config.KeyInitialScale, strconv.Itoa(int(a.InitialScale))},
		{config.KeyAllowZeroInitialScale, strconv.FormatBool(a.AllowZeroInitialScale)},
		{config.KeyMinScale, strconv.Itoa(int(a.MinScale))},
		{config.KeyMaxScale, maxScale},
		{config.KeyMaxScaleLimit, limit},
		{config.KeyTickInterval, dur(a.TickInterval)},
	}, policyKeyRow(a)...))
}

// policyKeyRow shows scale-to-zero-policy when it is not the default (so
// the table of a Knative configuration stays Knative's).
func policyKeyRow(a *config.Autoscaler) [][2]string {
	if a.ScaleToZeroPolicy == config.ScaleToZeroKnative {
		return nil
	}
	return [][2]string{{config.KeyScaleToZeroPolicy, a.ScaleToZeroPolicy}}
}

func writeRevisionText(w io.Writer, rr *revisionReport) {
	from := rr.origin
	if rr.kind != "" && rr.kind != "Deployment" {
		from = rr.kind + " at " + from
	}
	verdict := status(rr.Errors)
	if len(rr.Errors) == 0 && len(rr.warnings) > 0 {
		verdict = "valid, " + plural(len(rr.warnings), "warning") + ":"
	}
	fmt.Fprintf(w, "revision %s/%s from %s: %s\n", rr.Namespace, rr.Name, from, verdict)
	writeErrors(w, rr.Errors)
	writeErrors(w, rr.warnings)
	r := rr.revision
	if r == nil {
		return
	}
	if r.Class == config.ClassHPA {
		writeTable(w, append(hpaRows(r), timeoutRows(rr.timeouts)...))
		return
	}
	cc := "0 (unlimited)"
	if r.ContainerConcurrency > 0 {
		cc = fmt.Sprintf("%d requests per pod", r.ContainerConcurrency)
	}
	maxScale := strconv.Itoa(int(r.MaxScale))
	if r.MaxScale == 0 {
		maxScale = "unlimited"
	}
	activation := "none"
	if r.ActivationScale > 0 {
		activation = strconv.Itoa(int(r.ActivationScale))
	}
	metric := r.Metric
	if metric == "" {
		metric = "(none)"
	}
	rows := [][2]string{
		{"class", r.Class},
		{"metric", metric},
		{"container concurrency", cc},
		{"target per pod", fmt.Sprintf("%s (total %s × utilization %s%%)", num(r.Target), num(r.Total), num(r.TargetUtilization*100))},
		{"target burst capacity", num(r.TargetBurstCapacity)},
		{"stable / panic window", dur(r.StableWindow) + " / " + dur(r.PanicWindow)},
		{"panic threshold", num(r.PanicThreshold*100) + "%"},
		{"aggregation", r.Aggregation},
		{"min / max scale", fmt.Sprintf("%d / %s", r.MinScale, maxScale)},
		{"initial scale", strconv.Itoa(int(r.InitialScale))},
		{"activation scale", activation},
		{"max scale up / down rate", num(r.MaxScaleUpRate) + " / " + num(r.MaxScaleDownRate)},
		{"scale-down delay", dur(r.ScaleDownDelay)},
		{"scale to zero", scaleToZero(r)},
	}
	if r.EnableScaleToZero && r.ScaleToZeroPolicy == config.ScaleToZeroLearned {
		rows = append(rows, [2]string{"scale-to-zero policy", learnedExplained(r)})
	}
	rows = append(rows, [][2]string{
		{"progress deadline", fmt.Sprintf("%s (activation timeout %s)", dur(r.ProgressDeadline), dur(r.ActivationTimeout()))},
		{"tick interval", dur(r.TickInterval)},
	}...)
	writeTable(w, append(append(rows, behaviorRows(r.Behavior)...), timeoutRows(rr.timeouts)...))
}

// timeoutRows show a revision's timeouts as the queue-proxy and the
// activator apply them: a Knative revision's, and a Deployment's whose
// containers set REVISION_*_TIMEOUT_SECONDS; none for another Deployment.
func timeoutRows(t *manifest.Timeouts) [][2]string {
	if t == nil {
		return nil
	}
	secs := func(v *time.Duration, unset string) string {
		switch {
		case v == nil:
			return unset
		case *v == 0:
			return "0s (" + unset + ")"
		}
		return config.TimeoutSecondsText(*v) + "s"
	}
	request := secs(t.Request, dur(config.DefaultRevisionTimeout)+" (Knative's default)")
	return [][2]string{{"request timeout", request},
		{"response start / idle timeout", secs(t.ResponseStart, "the request timeout") + " / " + secs(t.Idle, "none")}}
}

// learnedExplained says what the learned policy will do with the
// revision's settings.
func learnedExplained(r *config.Revision) string {
	lead := "a tick plus the longest of its latest pod start-ups (10s until it has seen one)"
	if r.PrewarmLead != config.PrewarmLeadAuto {
		lead = dur(r.PrewarmLead)
	}
	return fmt.Sprintf("learned: after %d idle gaps, predicts the next one from the gaps that followed gaps like the last one "+
		"(from all of them where those are few) and keeps a pod through idle times where the gaps that end there, times the "+
		"cold-start cost %s for each request that would start cold, outweigh the pod time; past %ds of idle time, only at the "+
		"seconds of the minute at which its latest long gaps ended, when they ended at few; releases it otherwise and starts "+
		"it %s ahead of the next such time (Knative's rules until then); the history outlives autoscaler restarts "+
		"and leader failovers (ConfigMaps ebb-learned-state-N on a cluster, run --state-dir locally)",
		decider.LearnedMinGaps, dur(r.ColdStartCost), decider.PhaseMinGap, lead)
}

func scaleToZero(r *config.Revision) string {
	if !r.EnableScaleToZero {
		return "disabled"
	}
	return fmt.Sprintf("grace %s, pod retention %s", dur(r.ScaleToZeroGracePeriod), dur(r.ScaleToZeroPodRetentionPeriod))
}

func status(errs []string) string {
	switch len(errs) {
	case 0:
		return "valid"
	case 1:
		return "INVALID, 1 error:"
	}
	return fmt.Sprintf("INVALID, %d errors:", len(errs))
}

func writeErrors(w io.Writer, errs []string) {
	for _, e := range errs {
		fmt.Fprintf(w, "  - %s\n", e)
	}
}

func writeTable(w io.Writer, rows [][2]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, row := range rows {
		fmt.Fprintf(tw, "  %s\t%s\n", row[0], row[1])
	}
	tw.Flush()
}

// verdict is the last line: what is wrong, or that everything is valid.
func verdict(rep *validateReport) string {
	invalid := 0
	for _, r := range rep.Revisions {
		if !r.Valid {
			invalid++
		}
	}
	revs := plural(len(rep.Revisions), "revision")
	if rep.valid() {
		return fmt.Sprintf("valid: %s and %s", config.ConfigMapName, revs)
	}
	var parts []string
	if n := len(rep.ConfigMap.Errors); n > 0 {
		parts = append(parts, fmt.Sprintf("%s in %s", plural(n, "error"), config.ConfigMapName))
	}
	if invalid > 0 {
		parts = append(parts, fmt.Sprintf("%d of %s invalid", invalid, revs))
	}
	return "invalid: " + strings.Join(parts, ", ")
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// num writes a number without float noise (0.57 × 100 shows as 57).
func num(f float64) string { return strconv.FormatFloat(math.Round(f*1e9)/1e9, 'f', -1, 64) }

// dur writes a duration in seconds, like the JSON output ("60s", "1.5s").
func dur(d time.Duration) string { return num(d.Seconds()) + "s" }
