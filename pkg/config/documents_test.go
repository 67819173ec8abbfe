package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/behavior"
	"ebb.dev/ebb/pkg/fielderr"
)

// fakeDocs is a DocumentParser for this package's tests (the real one,
// hpa.DocumentParser, imports this package): it knows the documents of
// its maps, and any other value is a problem with the whole value.
type fakeDocs struct {
	behaviors map[string]*behavior.Behavior
	metrics   map[string][]MetricTarget
	// problems are returned for a value, with Field set.
	problems map[string][]*fielderr.Error
}

var unknownDoc = &fielderr.Error{Rule: "is not a document the fake knows", Fix: "add it to fakeDocs"}

func (f fakeDocs) Behavior(raw string) (*behavior.Behavior, []*fielderr.Error) {
	if p, ok := f.problems[raw]; ok {
		return nil, p
	}
	if b, ok := f.behaviors[raw]; ok {
		return b, nil
	}
	return nil, []*fielderr.Error{unknownDoc}
}

func (f fakeDocs) Metrics(raw string) ([]MetricTarget, []*fielderr.Error) {
	if p, ok := f.problems[raw]; ok {
		return nil, p
	}
	if m, ok := f.metrics[raw]; ok {
		return m, nil
	}
	return nil, []*fielderr.Error{unknownDoc}
}

// testDocs parses the documents this package's tests use.
var testDocs = fakeDocs{
	behaviors: map[string]*behavior.Behavior{"{}": behavior.Default(&behavior.Behavior{}), "null": nil},
	metrics: map[string][]MetricTarget{
		"rps+memory": {{Metric: MetricRPS, Target: 5}, {Metric: MetricMemory, Target: 60}},
		"bad values": {{Metric: "cpu", Target: 0}, {Metric: "cpu", Target: 50}},
		"[]":         {},
		"null":       nil,
	},
	problems: map[string][]*fielderr.Error{
		"no policy": {{Field: "scaleUp.policies", FieldValue: "[]", Rule: "must specify at least one policy", Fix: "add one"}},
	},
}

func TestNewRevisionDocuments(t *testing.T) {
	rev, err := NewRevision(nil, map[string]string{AnnotationClass: ClassHPA, AnnotationBehavior: "{}", AnnotationMetrics: "rps+memory"}, testDocs)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{testDocs.behaviors["{}"], testDocs.metrics["rps+memory"], MetricRPS}
	if diff := cmp.Diff(want, []any{rev.Behavior, rev.Metrics, rev.Metric}); diff != "" {
		t.Errorf("revision (-want +got):\n%s", diff)
	}
}

func TestNewRevisionNullDocuments(t *testing.T) {
	rev, err := NewRevision(nil, map[string]string{AnnotationClass: ClassHPA, AnnotationBehavior: "null", AnnotationMetrics: "null"}, testDocs)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{(*behavior.Behavior)(nil), []MetricTarget{{Metric: MetricCPU, Target: hpaDefaultUtilization}}, MetricCPU}
	if diff := cmp.Diff(want, []any{rev.Behavior, rev.Metrics, rev.Metric}); diff != "" {
		t.Errorf("revision (-want +got):\n%s", diff)
	}
}

// TestNewRevisionDocumentErrors: the documents' problems are placed in
// their annotation, and come back together with every other problem.
func TestNewRevisionDocumentErrors(t *testing.T) {
	_, err := NewRevision(nil, map[string]string{AnnotationClass: ClassHPA, AnnotationMinScale: "-1",
		AnnotationBehavior: "no policy", AnnotationMetrics: "bad values"}, testDocs)
	want := []string{
		`annotation "autoscaling.knative.dev/min-scale" = "-1": must be at least 0; set it to 0 (no minimum) or more`,
		`annotation "autoscaling.ebb.dev/behavior" = "no policy": scaleUp.policies = []: must specify at least one policy; add one`,
		`annotation "autoscaling.ebb.dev/metrics" = "bad values": [0].target = 0: must be at least 1 (percent of the request); set the utilization to keep, e.g. 80`,
		`annotation "autoscaling.ebb.dev/metrics" = "bad values": [1].metric = "cpu": is already given at [0]; give each metric once (per container)`,
	}
	if diff := cmp.Diff(want, errorLines(err)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// TestNewRevisionWithoutParser: a program that passes no DocumentParser
// gets an error for each document annotation, never a revision that
// silently ignores it; other revisions resolve.
func TestNewRevisionWithoutParser(t *testing.T) {
	_, err := NewRevision(nil, map[string]string{AnnotationClass: ClassHPA, AnnotationBehavior: "{}", AnnotationMetrics: "[]"}, nil)
	fes := fielderr.Errors(err)
	if len(fes) != 2 || fes[0].Key != AnnotationBehavior || fes[1].Key != AnnotationMetrics || !strings.Contains(fes[0].Fix, "hpa.DocumentParser") {
		t.Errorf("NewRevision without a parser: %v, want one error per document annotation naming the fix", err)
	}
	if _, err := NewRevision(nil, map[string]string{AnnotationMinScale: "1"}, nil); err != nil {
		t.Errorf("NewRevision without documents and without a parser: %v", err)
	}
}

func errorLines(err error) []string {
	var out []string
	for _, fe := range fielderr.Errors(err) {
		out = append(out, fe.Error())
	}
	return out
}

func TestValidateMetrics(t *testing.T) {
	tests := []struct {
		name    string
		metrics []MetricTarget
		want    []string // each error's text
	}{
		{"one of each", []MetricTarget{{Metric: "concurrency", Target: 0.01}, {Metric: "rps", Target: 1e6},
			{Metric: "cpu", Target: 1}, {Metric: "memory", Target: 250}}, nil},
		{"none", []MetricTarget{}, []string{`must list at least one metric; fix: list the metrics, ` +
			`e.g. [{"metric": "concurrency", "target": 10}], or remove the annotation`}},
		{"unknown and duplicate", []MetricTarget{{Metric: "rps", Target: 1}, {Metric: "RPS", Target: 1}, {Metric: "rps", Target: 2}},
			[]string{`[1].metric = "RPS": must be concurrency, rps, cpu or memory; fix: use "concurrency" or "rps" (per pod), ` +
				`or "cpu" or "memory" (percent of the request)`,
				`[2].metric = "rps": is already given at [0]; fix: give each metric once (per container)`}},
		{"targets", []MetricTarget{{Metric: "concurrency", Target: 0.001}, {Metric: "memory", Target: 0.9}},
			[]string{"[0].target = 0.001: must be at least 0.01; fix: set the per-pod average to keep, e.g. 10",
				"[1].target = 0.9: must be at least 1 (percent of the request); fix: set the utilization to keep, e.g. 80"}},
		{"per container and average values", []MetricTarget{{Metric: "cpu", Target: 50}, {Metric: "cpu", Target: 50, Container: "app"},
			{Metric: "memory", Target: 64 << 20, AverageValue: true, Container: "app"}}, nil},
		{"averageValue and container misused", []MetricTarget{{Metric: "rps", Target: 5, AverageValue: true},
			{Metric: "concurrency", Target: 5, Container: "app"}, {Metric: "cpu", Target: 0, AverageValue: true}, {Metric: "cpu", Target: 50, Container: "app"},
			{Metric: "cpu", Target: 60, Container: "app"}},
			[]string{`[0].averageValue = 5: applies to cpu and memory only; fix: write the per-pod average as "target"`,
				`[1].container = "app": applies to cpu and memory only; fix: remove it: the queue-proxy measures the whole pod's requests`,
				`[2].averageValue = 0: must be above 0; fix: set the per-pod average to keep, e.g. "200m" (cpu) or "256Mi" (memory)`,
				`[4].metric = "cpu": is already given at [3]; fix: give each metric once (per container)`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, fe := range validateMetrics(tc.metrics) {
				got = append(got, fe.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("validateMetrics (-want +got):\n%s", diff)
			}
		})
	}
}
