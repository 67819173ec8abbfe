package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/decider/behavior"
)

func TestRevisionComplete(t *testing.T) {
	rev, err := NewRevision(nil, map[string]string{AnnotationClass: ClassHPA, AnnotationBehavior: "{}", AnnotationMetrics: "[...]"})
	if err != nil {
		t.Fatal(err)
	}
	if err := rev.CheckComplete(); !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), AnnotationBehavior+", "+AnnotationMetrics) {
		t.Fatalf("CheckComplete() = %v, want ErrIncomplete naming both annotations", err)
	}
	b := behavior.Default(&behavior.Behavior{})
	metrics := []MetricTarget{{Metric: MetricRPS, Target: 5}, {Metric: MetricMemory, Target: 60}}
	if err := rev.Complete(b, metrics); err != nil {
		t.Fatal(err)
	}
	want := []any{b, metrics, MetricRPS, []Deferred(nil)}
	if diff := cmp.Diff(want, []any{rev.Behavior, rev.Metrics, rev.Metric, rev.Deferred}); diff != "" {
		t.Errorf("completed revision (-want +got):\n%s", diff)
	}
	if err := rev.CheckComplete(); err != nil {
		t.Errorf("CheckComplete() after Complete = %v", err)
	}
}

func TestRevisionCompleteRejects(t *testing.T) {
	rev, err := NewRevision(nil, map[string]string{AnnotationBehavior: "raw"})
	if err != nil {
		t.Fatal(err)
	}
	bad := &behavior.Behavior{ScaleUp: &behavior.Rules{Policies: []behavior.Policy{}}}
	err = rev.Complete(bad, []MetricTarget{{Metric: "cpu", Target: 0}})
	var got []string
	for _, fe := range FieldErrors(err) {
		got = append(got, fe.Key+": "+fe.Rule)
	}
	want := []string{
		AnnotationBehavior + ": scaleUp.policies = []: must specify at least one policy",
		AnnotationMetrics + ": [0].target = 0: must be at least 1 (percent of the request)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if rev.Behavior != nil || rev.CheckComplete() == nil {
		t.Errorf("a rejected Complete changed the revision: %+v", rev)
	}
}

func TestValidateMetrics(t *testing.T) {
	tests := []struct {
		name    string
		metrics []MetricTarget
		want    []string // the rule of each FieldError
	}{
		{"one of each", []MetricTarget{{"concurrency", 0.01}, {"rps", 1e6}, {"cpu", 1}, {"memory", 250}}, nil},
		{"none", []MetricTarget{}, []string{"must list at least one metric"}},
		{"unknown and duplicate", []MetricTarget{{"rps", 1}, {"RPS", 1}, {"rps", 2}},
			[]string{`[1].metric = "RPS": must be concurrency, rps, cpu or memory`, `[2].metric = "rps": is already given at [0]`}},
		{"targets", []MetricTarget{{"concurrency", 0.001}, {"memory", 0.9}},
			[]string{"[0].target = 0.001: must be at least 0.01", "[1].target = 0.9: must be at least 1 (percent of the request)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, fe := range FieldErrors(ValidateMetrics("raw", tc.metrics)) {
				got = append(got, fe.Rule)
				if fe.Key != AnnotationMetrics || fe.Value != "raw" || fe.Fix == "" {
					t.Errorf("error %q does not name the annotation, its value and a fix", fe)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ValidateMetrics (-want +got):\n%s", diff)
			}
		})
	}
}
