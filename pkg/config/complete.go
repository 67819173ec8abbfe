package config

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"ebb.dev/ebb/pkg/decider/behavior"
)

// ErrIncomplete is the error of CheckComplete: the revision still holds
// annotations that an edge must parse (hpa.Complete).
var ErrIncomplete = errors.New("revision not completed")

// hpaMetric reports whether the HPA class can compute metric m.
func hpaMetric(m string) bool {
	switch m {
	case MetricConcurrency, MetricRPS, MetricCPU, MetricMemory:
		return true
	}
	return false
}

// CheckComplete returns nil when the revision can go to a decider, and an
// ErrIncomplete naming the annotations still kept as written otherwise.
// A decider refuses (panics on) an incomplete revision: running without
// them would silently ignore what the user asked for.
func (r *Revision) CheckComplete() error {
	if len(r.Deferred) == 0 {
		return nil
	}
	keys := make([]string, len(r.Deferred))
	for i, d := range r.Deferred {
		keys[i] = d.Key
	}
	return fmt.Errorf("%w: %s not parsed; an edge must call hpa.Complete(rev) (package ebb.dev/ebb/pkg/decider/hpa) after config.NewRevision",
		ErrIncomplete, strings.Join(keys, ", "))
}

// Complete stores the parsed forms of the deferred annotations: b is the
// behavior of autoscaling.ebb.dev/behavior (nil when absent or null), and
// metrics the list of autoscaling.ebb.dev/metrics (nil when absent). It
// validates both (Validate, ValidateMetrics) and reports every problem at
// once as *FieldError; on success the revision is complete. An edge calls
// it through hpa.Complete, once, after NewRevision and before the revision
// reaches a decider; it is the one mutation of a Revision.
func (r *Revision) Complete(b *behavior.Behavior, metrics []MetricTarget) error {
	var errs []error
	if err := behavior.Validate(b); err != nil {
		raw := r.deferredValue(AnnotationBehavior)
		for _, e := range unjoin(err) {
			var fe *behavior.FieldError
			if errors.As(e, &fe) {
				errs = append(errs, BehaviorError(AnnotationBehavior, raw, fe))
			}
		}
	}
	if metrics != nil {
		if err := ValidateMetrics(r.deferredValue(AnnotationMetrics), metrics); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	r.Behavior = b
	if metrics != nil {
		r.Metrics, r.Metric = metrics, metrics[0].Metric
	}
	r.Deferred = nil
	return nil
}

func (r *Revision) deferredValue(key string) string {
	for _, d := range r.Deferred {
		if d.Key == key {
			return d.Value
		}
	}
	return ""
}

// BehaviorError turns a problem inside a JSON or YAML annotation (a field
// of the behavior, an entry of the metrics list) into a FieldError on the
// annotation: the rule names the field and its value.
func BehaviorError(key, raw string, fe *behavior.FieldError) *FieldError {
	rule := fe.Rule
	if fe.Field != "" {
		rule = fe.Field + " = " + fe.Value + ": " + fe.Rule
	}
	return &FieldError{Source: SourceAnnotation, Key: key, Value: raw, Rule: rule, Fix: fe.Fix}
}

// ValidateMetrics checks the parsed autoscaling.ebb.dev/metrics (raw is the
// annotation as written, for the errors): at least one entry, each metric
// concurrency, rps, cpu or memory and given once, each target finite and
// at least 0.01 (per-pod averages) or 1 (percent of the request). Every
// problem comes back at once, each a *FieldError.
func ValidateMetrics(raw string, metrics []MetricTarget) error {
	if len(metrics) == 0 {
		return errors.Join(metricsError(raw, "", "[]", "must list at least one metric",
			`list the metrics, e.g. [{"metric": "concurrency", "target": 10}], or remove the annotation`))
	}
	var errs []error
	seen := map[string]int{}
	for i, m := range metrics {
		at := fmt.Sprintf("[%d]", i)
		switch j, dup := seen[m.Metric]; {
		case !hpaMetric(m.Metric):
			errs = append(errs, metricsError(raw, at+".metric", fmt.Sprintf("%q", m.Metric),
				"must be concurrency, rps, cpu or memory", `use "concurrency" or "rps" (per pod), or "cpu" or "memory" (percent of the request)`))
		case dup:
			errs = append(errs, metricsError(raw, at+".metric", fmt.Sprintf("%q", m.Metric),
				fmt.Sprintf("is already given at [%d]", j), "give each metric once"))
		default:
			seen[m.Metric] = i
		}
		if bad := checkMetricTarget(m); bad != nil {
			errs = append(errs, metricsError(raw, at+".target", formatFloat(m.Target), bad.rule, bad.fix))
		}
	}
	return errors.Join(errs...)
}

func checkMetricTarget(m MetricTarget) *violation {
	switch {
	case math.IsNaN(m.Target) || math.IsInf(m.Target, 0):
		return broken("must be a finite number", "write a number such as 10")
	case m.Utilization() && m.Target < 1:
		return broken("must be at least 1 (percent of the request)", "set the utilization to keep, e.g. 80")
	case !m.Utilization() && m.Target < TargetMin:
		return broken("must be at least 0.01", "set the per-pod average to keep, e.g. 10")
	}
	return nil
}

func metricsError(raw, field, value, rule, fix string) *FieldError {
	return BehaviorError(AnnotationMetrics, raw, &behavior.FieldError{Field: field, Value: value, Rule: rule, Fix: fix})
}

// unjoin splits an errors.Join result into its parts.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
