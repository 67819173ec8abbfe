package hpa

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/behavior"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/fielderr"
)

const (
	classAnn = config.AnnotationClass
	hpaClass = config.ClassHPA
)

// newRevision is the one entry point with this package's parser.
func newRevision(anns map[string]string) (*config.Revision, error) {
	return config.NewRevision(nil, anns, DocumentParser{})
}

func TestDocumentParser(t *testing.T) {
	tests := []struct {
		name         string
		anns         map[string]string
		wantBehavior *behavior.Behavior
		wantMetrics  []config.MetricTarget
	}{
		{name: "no document", anns: map[string]string{},
			wantMetrics: nil},
		{name: "behavior {} is Kubernetes' defaults", anns: map[string]string{AnnotationBehavior: "{}"},
			wantBehavior: behavior.Default(&behavior.Behavior{})},
		{name: "behavior null is no behavior", anns: map[string]string{AnnotationBehavior: "null"}},
		{name: "behavior in YAML with a tolerance", anns: map[string]string{AnnotationBehavior: "scaleUp:\n  tolerance: 50m\n  selectPolicy: Disabled\n"},
			wantBehavior: behavior.Default(&behavior.Behavior{ScaleUp: &behavior.Rules{Tolerance: f64(0.05), SelectPolicy: ptr(behavior.Disabled)}})},
		{name: "metrics list replaces the metric", anns: map[string]string{classAnn: hpaClass,
			AnnotationMetrics: `[{"metric": "rps", "target": 50}, {"metric": "cpu", "target": 70}]`},
			wantMetrics: []config.MetricTarget{{Metric: "rps", Target: 50}, {Metric: "cpu", Target: 70}}},
		{name: "metrics list in YAML", anns: map[string]string{classAnn: hpaClass, AnnotationMetrics: "- metric: concurrency\n  target: 2.5\n"},
			wantMetrics: []config.MetricTarget{{Metric: "concurrency", Target: 2.5}}},
		{name: "average values and per-container metrics", anns: map[string]string{classAnn: hpaClass,
			AnnotationMetrics: `[{"metric": "cpu", "averageValue": "200m"}, {"metric": "memory", "averageValue": "64Mi", "container": "app"},
				{"metric": "cpu", "target": 50, "container": "app"}, {"metric": "memory", "averageValue": 1000}]`},
			wantMetrics: []config.MetricTarget{{Metric: "cpu", Target: 0.2, AverageValue: true},
				{Metric: "memory", Target: 64 << 20, AverageValue: true, Container: "app"},
				{Metric: "cpu", Target: 50, Container: "app"}, {Metric: "memory", Target: 1000, AverageValue: true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rev, err := newRevision(tc.anns)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantBehavior, rev.Behavior); diff != "" {
				t.Errorf("Behavior (-want +got):\n%s", diff)
			}
			if tc.wantMetrics == nil {
				return // the metric and target annotations: pkg/config's tests
			}
			if diff := cmp.Diff(tc.wantMetrics, rev.Metrics); diff != "" {
				t.Errorf("Metrics (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDocumentParserErrors(t *testing.T) {
	tests := []struct {
		name string
		anns map[string]string
		want []string // one per FieldError, each a part of its text
	}{
		{"behavior empty", map[string]string{AnnotationBehavior: " "}, []string{`"autoscaling.ebb.dev/behavior" = " ": is empty; remove the annotation`}},
		{"behavior field and value", map[string]string{AnnotationBehavior: `{"scaleUp": {"policies": [{"type": "Pods", "value": 0, "periodSeconds": 15}]}}`},
			[]string{"scaleUp.policies[0].value = 0: must be greater than 0; use a positive number"}},
		{"behavior unknown field", map[string]string{AnnotationBehavior: `{"scaleup": {}}`}, []string{`scaleup = {}: unknown field; did you mean "scaleUp"?`}},
		{"metrics not a list", map[string]string{classAnn: hpaClass, AnnotationMetrics: `{"metric": "rps"}`}, []string{"must be a list of {metric, target}"}},
		{"metrics entry problems, all at once", map[string]string{classAnn: hpaClass,
			AnnotationMetrics: `[{"metric": "rps", "target": "50"}, {"Metric": "cpu", "target": 80}, 3]`},
			[]string{`[0].target = "50": must be a number`, `[1].Metric = "cpu": unknown field; did you mean "metric"?`,
				"[1].metric = null: is missing", "[2] = 3: must be an object"}},
		{"metrics values", map[string]string{classAnn: hpaClass,
			AnnotationMetrics: `[{"metric": "gpu", "target": 1}, {"metric": "cpu", "target": 0.5}, {"metric": "rps", "target": 0}, {"metric": "rps", "target": 5}]`},
			[]string{`[0].metric = "gpu": must be concurrency, rps, cpu or memory`, "[1].target = 0.5: must be at least 1",
				"[2].target = 0: must be at least 0.01", `[3].metric = "rps": is already given at [2]`}},
		{"metrics averageValue and container problems", map[string]string{classAnn: hpaClass,
			AnnotationMetrics: `[{"metric": "cpu", "target": 50, "averageValue": "1"}, {"metric": "cpu", "averageValue": "lots"}, ` +
				`{"metric": "memory", "target": 50, "container": 3}]`},
			[]string{`[0] = target and averageValue: must give one of them`, `[1].averageValue = "lots": must be a quantity`,
				`[2].container = 3: must be a string`}},
		{"metrics averageValue on rps", map[string]string{classAnn: hpaClass, AnnotationMetrics: `[{"metric": "rps", "averageValue": "5"}]`},
			[]string{`[0].averageValue = 5: applies to cpu and memory only`}},
		{"metrics empty list", map[string]string{classAnn: hpaClass, AnnotationMetrics: `[]`}, []string{`"[]": must list at least one metric`}},
		{"both at once", map[string]string{classAnn: hpaClass, AnnotationMetrics: `[]`, AnnotationBehavior: `[]`},
			[]string{"behavior", "metrics"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rev, err := newRevision(tc.anns)
			checkFieldErrors(t, err, tc.want)
			if rev != nil {
				t.Errorf("a rejected revision came back: %+v", rev)
			}
		})
	}
}

// TestNewRevisionReportsEverything: other annotations' errors and the
// documents' errors come back together.
func TestNewRevisionReportsEverything(t *testing.T) {
	_, err := newRevision(map[string]string{
		config.AnnotationMinScale: "-1",
		AnnotationBehavior:        `{"scaleDown": {"selectPolicy": "Fastest"}}`,
		AnnotationMetrics:         `[{"metric": "rps", "target": 0}]`,
	})
	checkFieldErrors(t, err, []string{`"autoscaling.knative.dev/min-scale" = "-1"`,
		"metrics", // KPA class
		`scaleDown.selectPolicy = "Fastest"`, "[0].target = 0: must be at least 0.01"})
}

// TestDocumentExamples: the documented examples of the document
// annotations parse (pkg/config's tests cannot: they have no parser).
func TestDocumentExamples(t *testing.T) {
	for _, a := range config.Annotations() {
		if a.Type != "JSON or YAML" {
			continue
		}
		anns := map[string]string{a.Key: a.Example}
		if a.Key == AnnotationMetrics {
			anns[classAnn] = hpaClass
		}
		if _, err := newRevision(anns); err != nil {
			t.Errorf("example of %q is invalid: %v", a.Key, err)
		}
	}
}

// checkFieldErrors requires err to hold exactly len(want) *FieldError,
// the i-th containing want[i].
func checkFieldErrors(t *testing.T, err error, want []string) {
	t.Helper()
	fes := fielderr.Errors(err)
	if len(fes) != len(want) {
		t.Fatalf("%d FieldErrors, want %d:\n%v", len(fes), len(want), err)
	}
	for i, fe := range fes {
		if !strings.Contains(fe.Error(), want[i]) {
			t.Errorf("error %d = %q, want it to contain %q", i, fe.Error(), want[i])
		}
		if fe.Rule == "" || fe.Fix == "" || strings.Contains(fe.Error(), "\n") {
			t.Errorf("error %d = %q lacks a rule or a fix, or spans lines", i, fe.Error())
		}
	}
}

// FuzzDocumentParser: the document annotations never panic NewRevision;
// what it accepts validates, and every rejection is made of one-line
// FieldErrors.
func FuzzDocumentParser(f *testing.F) {
	for _, s := range []string{"{}", "null", "", `[{"metric": "rps", "target": 5}]`, "- {metric: cpu, target: 80}",
		`{"scaleDown": {"policies": [{"type": "Percent", "value": 50, "periodSeconds": 30}], "tolerance": "0.05"}}`, "[1, {}]"} {
		f.Add(s, s, true)
	}
	f.Fuzz(func(t *testing.T, behaviorValue, metricsValue string, withMetrics bool) {
		anns := map[string]string{classAnn: hpaClass, AnnotationBehavior: behaviorValue}
		if withMetrics {
			anns[AnnotationMetrics] = metricsValue
		}
		rev, err := newRevision(anns)
		if err != nil {
			for _, fe := range fielderr.Errors(err) {
				if fe.Rule == "" || fe.Fix == "" || strings.ContainsAny(fe.Rule+fe.Fix, "\n") {
					t.Fatalf("malformed error %q", fe.Error())
				}
			}
			if len(fielderr.Errors(err)) == 0 {
				t.Fatalf("error without FieldErrors: %v", err)
			}
			return
		}
		if behavior.Validate(rev.Behavior) != nil {
			t.Fatalf("accepted an invalid behavior: %+v", rev.Behavior)
		}
		if _, err := newRevision(map[string]string{classAnn: hpaClass, AnnotationMetrics: mustJSON(t, rev.Metrics)}); err != nil || len(rev.Metrics) == 0 {
			t.Fatalf("accepted invalid metrics %+v", rev.Metrics)
		}
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
