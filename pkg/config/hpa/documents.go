package hpa

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"ebb.dev/ebb/pkg/behavior"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/fielderr"
)

// AnnotationMetrics is Ebb's annotation listing the HPA class's metrics and
// targets, in JSON or YAML:
//
//	[{"metric": "concurrency", "target": 10}, {"metric": "cpu", "target": 80}]
//
// A cpu or memory entry takes "averageValue" (a quantity per pod, such as
// "200m" or "256Mi": Kubernetes' averageValue) instead of "target" (a
// utilization of the request), and "container" to read one container
// only (Kubernetes' ContainerResource metric):
//
//	[{"metric": "cpu", "target": 50, "container": "app"}, {"metric": "memory", "averageValue": "256Mi"}]
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
func (DocumentParser) Behavior(raw string) (*behavior.Behavior, []*fielderr.Error) {
	b, problems := parseBehavior(raw)
	if len(problems) > 0 {
		return nil, problems
	}
	return ToBehavior(b), nil
}

// Metrics parses a metrics annotation: JSON or YAML, strict (unknown,
// misspelt or missing fields are errors), each entry {metric: string,
// target: number} or {metric, averageValue: quantity}, with an optional
// container. "null" is no list. config.NewRevision checks the values.
func (DocumentParser) Metrics(raw string) ([]config.MetricTarget, []*fielderr.Error) {
	return parseMetrics(raw)
}

var metricFields = fields{"metric": nil, "target": nil, "averageValue": nil, "container": nil}

// parseMetrics reads the metrics list: JSON or YAML, strict (unknown,
// misspelt or missing fields are errors), each entry {metric: string,
// target: number}. "null" is the same as no annotation. The values are
// checked by config.NewRevision.
func parseMetrics(s string) ([]config.MetricTarget, []*fielderr.Error) {
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

func metricEntry(i int, e any) (config.MetricTarget, []*fielderr.Error) {
	at := fmt.Sprintf("[%d]", i)
	obj, ok := e.(map[string]any)
	if !ok {
		v, _ := json.Marshal(e)
		return config.MetricTarget{}, []*fielderr.Error{{Field: at, FieldValue: string(v),
			Rule: "must be an object {metric, target}", Fix: `write e.g. {"metric": "rps", "target": 50}`}}
	}
	problems := unknownFields(obj, metricFields, at+".")
	var m config.MetricTarget
	switch v := obj["metric"].(type) {
	case string:
		m.Metric = v
	case nil:
		problems = append(problems, &fielderr.Error{Field: at + ".metric", FieldValue: "null", Rule: "is missing",
			Fix: "name the metric: concurrency, rps, cpu or memory"})
	default:
		problems = append(problems, &fielderr.Error{Field: at + ".metric", FieldValue: fmt.Sprint(v), Rule: "must be a string",
			Fix: "name the metric: concurrency, rps, cpu or memory"})
	}
	problems = append(problems, metricTarget(at, obj, &m)...)
	switch v := obj["container"].(type) {
	case nil:
	case string:
		if v == "" {
			problems = append(problems, &fielderr.Error{Field: at + ".container", FieldValue: `""`, Rule: "must not be empty",
				Fix: "name a container of the pod, or remove the field to measure the whole pod"})
		}
		m.Container = v
	default:
		problems = append(problems, &fielderr.Error{Field: at + ".container", FieldValue: fmt.Sprint(v), Rule: "must be a string",
			Fix: "name a container of the pod"})
	}
	return m, problems
}

// metricTarget reads an entry's target: "target" (a number: per pod, or
// percent of the request for cpu and memory) or "averageValue" (a
// Kubernetes quantity such as "200m" or "256Mi", or a number, in the
// resource's unit), exactly one of them.
func metricTarget(at string, obj map[string]any, m *config.MetricTarget) []*fielderr.Error {
	target, hasTarget := obj["target"]
	avg, hasAvg := obj["averageValue"]
	switch {
	case hasTarget && hasAvg:
		return []*fielderr.Error{{Field: at, FieldValue: "target and averageValue", Rule: "must give one of them",
			Fix: `keep "target" (percent of the request) or "averageValue" (per pod), not both`}}
	case hasAvg:
		m.AverageValue = true
		q, err := quantityOf(avg)
		if err != nil {
			v, _ := json.Marshal(avg)
			return []*fielderr.Error{{Field: at + ".averageValue", FieldValue: string(v), Rule: "must be a quantity",
				Fix: `write it as Kubernetes does, e.g. "200m" (cpu: 0.2 cores) or "256Mi" (memory)`}}
		}
		m.Target = q
		return nil
	}
	n, isNumber := target.(json.Number)
	f, err := n.Float64()
	if !isNumber || err != nil {
		v, _ := json.Marshal(target)
		return []*fielderr.Error{{Field: at + ".target", FieldValue: string(v), Rule: "must be a number",
			Fix: "write the target as a number, e.g. 10 (per pod) or 80 (percent)"}}
	}
	m.Target = f
	return nil
}

// quantityOf reads a quantity given as a string ("200m") or a number.
func quantityOf(v any) (float64, error) {
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case json.Number:
		s = v.String()
	default:
		return 0, fmt.Errorf("not a quantity: %v", v)
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, err
	}
	return q.AsApproximateFloat64(), nil
}
