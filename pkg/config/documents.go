package config

import (
	"fmt"
	"math"

	"ebb.dev/ebb/pkg/behavior"
	"ebb.dev/ebb/pkg/fielderr"
)

// DocumentParser parses the annotations whose values are JSON or YAML
// documents: autoscaling.ebb.dev/behavior (an autoscaling/v2
// HorizontalPodAutoscalerBehavior) and autoscaling.ebb.dev/metrics (the HPA
// class's list of {metric, target}). Their formats are Kubernetes' types,
// which the pure tier does not import, so a program passes the parser to
// NewRevision: package hpa's DocumentParser (ebb.dev/ebb/pkg/config/hpa) is
// the one implementation, wired by the programs in cmd/ and hack/.
//
// Each method reports every problem at once, each a *fielderr.Error with Field
// set to the path inside the document ("" for the whole value); NewRevision
// places them in the annotation.
type DocumentParser interface {
	// Behavior parses, defaults and validates a behavior. "null" is no
	// behavior (nil, no problem).
	Behavior(raw string) (*behavior.Behavior, []*fielderr.Error)
	// Metrics parses a metrics list; NewRevision checks its values
	// (validateMetrics). "null" is no list (nil, no problem).
	Metrics(raw string) ([]MetricTarget, []*fielderr.Error)
}

// parseDocuments parses the document annotations that are present with
// docs, and checks the metrics' values. It runs even when other
// annotations failed, so that every problem of the revision comes back at
// once.
func (p *revisionParse) parseDocuments(docs DocumentParser) {
	if b := &p.ann.behavior; b.present() {
		if docs == nil {
			p.fail(b.key, b.raw, noParser)
		} else {
			var problems []*fielderr.Error
			p.behaviorDoc, problems = docs.Behavior(b.raw)
			p.failIn(b.key, b.raw, problems)
		}
	}
	if m := &p.ann.metrics; m.present() {
		if docs == nil {
			p.fail(m.key, m.raw, noParser)
			return
		}
		var problems []*fielderr.Error
		p.metricsDoc, problems = docs.Metrics(m.raw)
		p.failIn(m.key, m.raw, problems)
		if len(problems) == 0 && p.metricsDoc != nil {
			p.failIn(m.key, m.raw, validateMetrics(p.metricsDoc))
		}
	}
}

// noParser: the program called NewRevision without a DocumentParser. The
// annotation is refused rather than ignored: ignoring it would silently
// drop what the user asked for.
var noParser = broken("cannot be read by this program: it passes no JSON and YAML document parser to config.NewRevision",
	"report this: the program must pass hpa.DocumentParser{} (package ebb.dev/ebb/pkg/config/hpa) to config.NewRevision")

// failIn records problems found inside the document of annotation key.
func (p *revisionParse) failIn(key, raw string, problems []*fielderr.Error) {
	for _, fe := range problems {
		p.errs = append(p.errs, fe.In(sourceAnnotation, key, raw))
	}
}

// hpaMetric reports whether the HPA class can compute metric m.
func hpaMetric(m string) bool {
	switch m {
	case MetricConcurrency, MetricRPS, MetricCPU, MetricMemory:
		return true
	}
	return false
}

// validateMetrics checks a parsed autoscaling.ebb.dev/metrics list: at
// least one entry, each metric concurrency, rps, cpu or memory and given
// once (per container), each target finite and at least 0.01 (per-pod
// averages) or 1 (percent of the request), averageValue and container on
// cpu and memory only. Every problem comes back at once, each with Field
// set to the entry's path.
func validateMetrics(metrics []MetricTarget) []*fielderr.Error {
	if len(metrics) == 0 {
		return []*fielderr.Error{{FieldValue: "[]", Rule: "must list at least one metric",
			Fix: `list the metrics, e.g. [{"metric": "concurrency", "target": 10}], or remove the annotation`}}
	}
	var errs []*fielderr.Error
	seen := map[string]int{}
	for i, m := range metrics {
		at := fmt.Sprintf("[%d]", i)
		key := m.Metric + "/" + m.Container
		switch j, dup := seen[key]; {
		case !hpaMetric(m.Metric):
			errs = append(errs, &fielderr.Error{Field: at + ".metric", FieldValue: fmt.Sprintf("%q", m.Metric),
				Rule: "must be concurrency, rps, cpu or memory", Fix: `use "concurrency" or "rps" (per pod), or "cpu" or "memory" (percent of the request)`})
		case dup:
			errs = append(errs, &fielderr.Error{Field: at + ".metric", FieldValue: fmt.Sprintf("%q", m.Metric),
				Rule: fmt.Sprintf("is already given at [%d]", j), Fix: "give each metric once (per container)"})
		default:
			seen[key] = i
		}
		if !m.Resource() && m.Container != "" {
			errs = append(errs, &fielderr.Error{Field: at + ".container", FieldValue: fmt.Sprintf("%q", m.Container),
				Rule: "applies to cpu and memory only", Fix: "remove it: the queue-proxy measures the whole pod's requests"})
		}
		if bad := checkMetricTarget(m); bad != nil {
			errs = append(errs, &fielderr.Error{Field: at + "." + targetField(m), FieldValue: formatFloat(m.Target), Rule: bad.rule, Fix: bad.fix})
		}
	}
	return errs
}

func targetField(m MetricTarget) string {
	if m.AverageValue {
		return "averageValue"
	}
	return "target"
}

func checkMetricTarget(m MetricTarget) *violation {
	switch {
	case math.IsNaN(m.Target) || math.IsInf(m.Target, 0):
		return broken("must be a finite number", "write a number such as 10")
	case m.AverageValue && !m.Resource():
		return broken("applies to cpu and memory only", `write the per-pod average as "target"`)
	case m.AverageValue && m.Target <= 0:
		return broken("must be above 0", `set the per-pod average to keep, e.g. "200m" (cpu) or "256Mi" (memory)`)
	case m.Utilization() && m.Target < 1:
		return broken("must be at least 1 (percent of the request)", "set the utilization to keep, e.g. 80")
	case !m.Resource() && m.Target < targetMin:
		return broken("must be at least 0.01", "set the per-pod average to keep, e.g. 10")
	}
	return nil
}
