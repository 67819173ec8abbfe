package hpa

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"ebb.dev/ebb/pkg/config"
)

// AnnotationMetrics is Ebb's annotation listing the HPA class's metrics and
// targets, in JSON or YAML:
//
//	[{"metric": "concurrency", "target": 10}, {"metric": "cpu", "target": 80}]
const AnnotationMetrics = config.AnnotationMetrics

// Complete parses the annotations config.NewRevision keeps as written
// (rev.Deferred: autoscaling.ebb.dev/behavior with ParseBehavior, then
// ToBehavior; autoscaling.ebb.dev/metrics as a list of {metric, target})
// and stores them in rev (config.Revision.Complete). Every problem comes
// back at once, each a *config.FieldError naming the annotation, its value,
// the field at fault, the rule and the fix.
//
// Every edge that builds a Revision for a decider calls it (or NewRevision)
// right after config.NewRevision: `autoscaler simulate`, `autoscaler
// validate` and the autoscaler service. A decider refuses a revision that
// was not completed (config.Revision.CheckComplete).
func Complete(rev *config.Revision) error {
	p := parseDeferred(rev.Deferred)
	if len(p.errs) > 0 {
		return errors.Join(p.errs...)
	}
	return rev.Complete(ToBehavior(p.behavior), p.metrics)
}

// NewRevision is config.NewRevision followed by Complete. When NewRevision
// fails, the behavior and metrics annotations are still parsed and checked
// so that every problem of the revision comes back at once.
func NewRevision(as *config.Autoscaler, annotations map[string]string) (*config.Revision, error) {
	rev, err := config.NewRevision(as, annotations)
	if err == nil {
		if err := Complete(rev); err != nil {
			return nil, err
		}
		return rev, nil
	}
	var deferred []config.Deferred
	for _, key := range []string{config.AnnotationBehavior, config.AnnotationMetrics} {
		if raw, ok := annotations[key]; ok {
			deferred = append(deferred, config.Deferred{Key: key, Value: raw})
		}
	}
	p := parseDeferred(deferred)
	return nil, errors.Join(append(unjoin(err), p.errs...)...)
}

// parsed is what parseDeferred read.
type parsed struct {
	behavior *autoscalingv2.HorizontalPodAutoscalerBehavior
	metrics  []config.MetricTarget
	errs     []error
}

// parseDeferred parses every deferred annotation and checks the metrics'
// values (Revision.Complete checks them again; running the check here too
// lets a broken behavior and broken metrics be reported together).
func parseDeferred(deferred []config.Deferred) parsed {
	var p parsed
	for _, d := range deferred {
		var problems []*FieldError
		switch d.Key {
		case config.AnnotationBehavior:
			p.behavior, problems = parseBehavior(d.Value)
		case config.AnnotationMetrics:
			p.metrics, problems = parseMetrics(d.Value)
			if p.metrics != nil {
				if err := config.ValidateMetrics(d.Value, p.metrics); err != nil {
					p.errs = append(p.errs, unjoin(err)...)
				}
			}
		default:
			problems = whole("is not an annotation hpa.Complete knows", "report this: pkg/config defers an annotation nobody parses")
		}
		for _, fe := range problems {
			p.errs = append(p.errs, config.BehaviorError(d.Key, d.Value, fe))
		}
	}
	return p
}

var metricFields = fields{"metric": nil, "target": nil}

// parseMetrics reads the metrics list: JSON or YAML, strict (unknown,
// misspelt or missing fields are errors), each entry {metric: string,
// target: number}. "null" is the same as no annotation. The values are
// checked by config.ValidateMetrics.
func parseMetrics(s string) ([]config.MetricTarget, []*FieldError) {
	const fix = `list the metrics, e.g. [{"metric": "concurrency", "target": 10}, {"metric": "cpu", "target": 80}]`
	switch {
	case strings.TrimSpace(s) == "":
		return nil, whole("is empty", "remove the annotation, or "+fix)
	case len(s) > maxBehaviorBytes:
		return nil, whole(fmt.Sprintf("is %d bytes, more than the %d a metrics list can need", len(s), maxBehaviorBytes), fix)
	}
	js, isNull, problems := decodeObject(s, nil, "must be a list of {metric, target}", fix)
	if isNull || len(problems) > 0 {
		return nil, problems
	}
	var list []any
	if err := decodeJSON(js, &list); err != nil {
		return nil, whole("cannot be read: "+oneLine(err), fix)
	}
	out := make([]config.MetricTarget, 0, len(list))
	for i, e := range list {
		m, bad := metricEntry(i, e)
		problems = append(problems, bad...)
		out = append(out, m)
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return out, nil
}

func metricEntry(i int, e any) (config.MetricTarget, []*FieldError) {
	at := fmt.Sprintf("[%d]", i)
	obj, ok := e.(map[string]any)
	if !ok {
		v, _ := json.Marshal(e)
		return config.MetricTarget{}, []*FieldError{{Field: at, Value: string(v),
			Rule: "must be an object {metric, target}", Fix: `write e.g. {"metric": "rps", "target": 50}`}}
	}
	problems := unknownFields(obj, metricFields, at+".")
	var m config.MetricTarget
	switch v := obj["metric"].(type) {
	case string:
		m.Metric = v
	case nil:
		problems = append(problems, &FieldError{Field: at + ".metric", Value: "null", Rule: "is missing",
			Fix: "name the metric: concurrency, rps, cpu or memory"})
	default:
		problems = append(problems, &FieldError{Field: at + ".metric", Value: fmt.Sprint(v), Rule: "must be a string",
			Fix: "name the metric: concurrency, rps, cpu or memory"})
	}
	n, isNumber := obj["target"].(json.Number)
	f, err := n.Float64()
	if !isNumber || err != nil {
		v, _ := json.Marshal(obj["target"])
		problems = append(problems, &FieldError{Field: at + ".target", Value: string(v), Rule: "must be a number",
			Fix: "write the target as a number, e.g. 10 (per pod) or 80 (percent)"})
	}
	m.Target = f
	return m, problems
}
