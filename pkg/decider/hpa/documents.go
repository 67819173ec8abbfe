package hpa

import (
	"encoding/json"
	"fmt"
	"strings"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/decider/behavior"
	"ebb.dev/ebb/pkg/field"
)

// AnnotationMetrics is Ebb's annotation listing the HPA class's metrics and
// targets, in JSON or YAML:
//
//	[{"metric": "concurrency", "target": 10}, {"metric": "cpu", "target": 80}]
const AnnotationMetrics = config.AnnotationMetrics

// DocumentParser parses the annotations whose values are JSON or YAML
// documents for config.NewRevision, the one entry point from annotations
// to a complete config.Revision: autoscaling.ebb.dev/behavior (ParseBehavior,
// then ToBehavior) and autoscaling.ebb.dev/metrics (a list of {metric,
// target}). It implements config.DocumentParser; every program that builds
// a Revision passes it (`autoscaler simulate` and `validate`, the
// autoscaler service through its options, hack/demoplot):
//
//	rev, err := config.NewRevision(as, annotations, hpa.DocumentParser{})
type DocumentParser struct{}

var _ config.DocumentParser = DocumentParser{}

// Behavior parses, defaults and validates a behavior annotation; "null"
// is no behavior.
func (DocumentParser) Behavior(raw string) (*behavior.Behavior, []*field.Error) {
	b, problems := parseBehavior(raw)
	if len(problems) > 0 {
		return nil, problems
	}
	return ToBehavior(b), nil
}

// Metrics parses a metrics annotation: JSON or YAML, strict (unknown,
// misspelt or missing fields are errors), each entry {metric: string,
// target: number}. "null" is no list. config.NewRevision checks the values.
func (DocumentParser) Metrics(raw string) ([]config.MetricTarget, []*field.Error) {
	return parseMetrics(raw)
}

var metricFields = fields{"metric": nil, "target": nil}

// parseMetrics reads the metrics list: JSON or YAML, strict (unknown,
// misspelt or missing fields are errors), each entry {metric: string,
// target: number}. "null" is the same as no annotation. The values are
// checked by config.NewRevision.
func parseMetrics(s string) ([]config.MetricTarget, []*field.Error) {
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

func metricEntry(i int, e any) (config.MetricTarget, []*field.Error) {
	at := fmt.Sprintf("[%d]", i)
	obj, ok := e.(map[string]any)
	if !ok {
		v, _ := json.Marshal(e)
		return config.MetricTarget{}, []*field.Error{{Field: at, FieldValue: string(v),
			Rule: "must be an object {metric, target}", Fix: `write e.g. {"metric": "rps", "target": 50}`}}
	}
	problems := unknownFields(obj, metricFields, at+".")
	var m config.MetricTarget
	switch v := obj["metric"].(type) {
	case string:
		m.Metric = v
	case nil:
		problems = append(problems, &field.Error{Field: at + ".metric", FieldValue: "null", Rule: "is missing",
			Fix: "name the metric: concurrency, rps, cpu or memory"})
	default:
		problems = append(problems, &field.Error{Field: at + ".metric", FieldValue: fmt.Sprint(v), Rule: "must be a string",
			Fix: "name the metric: concurrency, rps, cpu or memory"})
	}
	n, isNumber := obj["target"].(json.Number)
	f, err := n.Float64()
	if !isNumber || err != nil {
		v, _ := json.Marshal(obj["target"])
		problems = append(problems, &field.Error{Field: at + ".target", FieldValue: string(v), Rule: "must be a number",
			Fix: "write the target as a number, e.g. 10 (per pod) or 80 (percent)"})
	}
	m.Target = f
	return m, problems
}
