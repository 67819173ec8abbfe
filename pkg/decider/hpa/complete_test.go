package hpa

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/decider/behavior"
)

const (
	classAnn = config.AnnotationClass
	hpaClass = config.ClassHPA
)

func TestComplete(t *testing.T) {
	tests := []struct {
		name         string
		anns         map[string]string
		wantBehavior *behavior.Behavior
		wantMetrics  []config.MetricTarget
	}{
		{name: "nothing deferred", anns: map[string]string{},
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
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rev, err := config.NewRevision(nil, tc.anns)
			if err != nil {
				t.Fatal(err)
			}
			before := rev.Metrics
			if err := Complete(rev); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if diff := cmp.Diff(tc.wantBehavior, rev.Behavior); diff != "" {
				t.Errorf("Behavior (-want +got):\n%s", diff)
			}
			want := tc.wantMetrics
			if want == nil {
				want = before
			}
			if diff := cmp.Diff(want, rev.Metrics); diff != "" {
				t.Errorf("Metrics (-want +got):\n%s", diff)
			}
			if err := rev.CheckComplete(); err != nil || rev.Deferred != nil {
				t.Errorf("after Complete: CheckComplete() = %v, Deferred = %v", err, rev.Deferred)
			}
		})
	}
}

func TestCompleteErrors(t *testing.T) {
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
		{"metrics empty list", map[string]string{classAnn: hpaClass, AnnotationMetrics: `[]`}, []string{`"[]": must list at least one metric`}},
		{"both at once", map[string]string{classAnn: hpaClass, AnnotationMetrics: `[]`, AnnotationBehavior: `[]`},
			[]string{"behavior", "metrics"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rev, err := config.NewRevision(nil, tc.anns)
			if err != nil {
				t.Fatal(err)
			}
			checkFieldErrors(t, Complete(rev), tc.want)
			if rev.CheckComplete() == nil {
				t.Errorf("a revision that failed Complete passes CheckComplete")
			}
		})
	}
}

// TestNewRevisionReportsEverything: config errors and the deferred
// annotations' errors come back together.
func TestNewRevisionReportsEverything(t *testing.T) {
	_, err := NewRevision(nil, map[string]string{
		config.AnnotationMinScale: "-1",
		AnnotationBehavior:        `{"scaleDown": {"selectPolicy": "Fastest"}}`,
		AnnotationMetrics:         `[{"metric": "rps", "target": 0}]`,
	})
	checkFieldErrors(t, err, []string{`"autoscaling.knative.dev/min-scale" = "-1"`,
		"metrics", // KPA class
		`scaleDown.selectPolicy = "Fastest"`, "[0].target = 0: must be at least 0.01"})
	rev, err := NewRevision(nil, map[string]string{AnnotationBehavior: "{}"})
	if err != nil || rev.Behavior == nil || rev.CheckComplete() != nil {
		t.Errorf("NewRevision with a valid behavior = %+v, %v", rev, err)
	}
}

func TestCheckCompleteNamesTheFix(t *testing.T) {
	rev, err := config.NewRevision(nil, map[string]string{AnnotationBehavior: "{}"})
	if err != nil {
		t.Fatal(err)
	}
	err = rev.CheckComplete()
	if !errors.Is(err, config.ErrIncomplete) || !strings.Contains(err.Error(), "hpa.Complete") {
		t.Errorf("CheckComplete() = %v, want ErrIncomplete naming hpa.Complete", err)
	}
}

// checkFieldErrors requires err to hold exactly len(want) config.FieldErrors,
// the i-th containing want[i].
func checkFieldErrors(t *testing.T, err error, want []string) {
	t.Helper()
	fes := config.FieldErrors(err)
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

// FuzzComplete: the annotations never panic Complete; what it accepts is
// complete, validates, and every rejection is made of one-line FieldErrors.
func FuzzComplete(f *testing.F) {
	for _, s := range []string{"{}", "null", "", `[{"metric": "rps", "target": 5}]`, "- {metric: cpu, target: 80}",
		`{"scaleDown": {"policies": [{"type": "Percent", "value": 50, "periodSeconds": 30}], "tolerance": "0.05"}}`, "[1, {}]"} {
		f.Add(s, s, true)
	}
	f.Fuzz(func(t *testing.T, behaviorValue, metricsValue string, withMetrics bool) {
		anns := map[string]string{classAnn: hpaClass, AnnotationBehavior: behaviorValue}
		if withMetrics {
			anns[AnnotationMetrics] = metricsValue
		}
		rev, err := config.NewRevision(nil, anns)
		if err != nil {
			t.Fatalf("NewRevision: %v", err)
		}
		if err := Complete(rev); err != nil {
			for _, fe := range config.FieldErrors(err) {
				if fe.Rule == "" || fe.Fix == "" || strings.ContainsAny(fe.Rule+fe.Fix, "\n") {
					t.Fatalf("malformed error %q", fe.Error())
				}
			}
			if len(config.FieldErrors(err)) == 0 {
				t.Fatalf("error without FieldErrors: %v", err)
			}
			return
		}
		if rev.CheckComplete() != nil || behavior.Validate(rev.Behavior) != nil {
			t.Fatalf("accepted but incomplete or invalid: %+v", rev)
		}
		if len(rev.Metrics) == 0 || config.ValidateMetrics("", rev.Metrics) != nil {
			t.Fatalf("accepted invalid metrics %+v", rev.Metrics)
		}
	})
}
