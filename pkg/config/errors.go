package config

import "fmt"

// Sources of a FieldError.
const (
	SourceConfigMap  = ConfigMapName // a key of the config-autoscaler ConfigMap
	SourceAnnotation = "annotation"  // a revision template annotation
)

// FieldError is one problem with one ConfigMap key or annotation. Every
// constructor in this package returns all of them at once, joined with
// errors.Join; use errors.As or FieldErrors to get them back.
type FieldError struct {
	Source string // SourceConfigMap or SourceAnnotation
	Key    string // the key as written, e.g. "stable-window" or "autoscaling.knative.dev/minScale"
	Value  string // the value as written, or the default when Defaulted
	// Defaulted is true when the key is absent and the rule broken by the
	// default value depends on another key (e.g. max-scale vs max-scale-limit).
	Defaulted bool
	Rule      string // what the value must satisfy, e.g. "must be within [6s, 1h]"
	Fix       string // what to change, e.g. "set it to a whole number of seconds between 6s and 1h"
}

// Error renders the problem on one line:
//
//	config-autoscaler "stable-window" = "3s": must be within [6s, 1h]; set it to ...
func (e *FieldError) Error() string {
	dflt := ""
	if e.Defaulted {
		dflt = " (default)"
	}
	return fmt.Sprintf("%s %q = %q%s: %s; %s", e.Source, e.Key, e.Value, dflt, e.Rule, e.Fix)
}

// FieldErrors returns the FieldErrors inside err (as built by errors.Join
// in this package), in order. It returns nil for a nil error.
func FieldErrors(err error) []*FieldError {
	if err == nil {
		return nil
	}
	var out []*FieldError
	if fe, ok := err.(*FieldError); ok {
		return []*FieldError{fe}
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			out = append(out, FieldErrors(e)...)
		}
	}
	return out
}

// violation is a broken rule and how to fix it, before it is attached to a
// key and value.
type violation struct {
	rule, fix string
}

func broken(rule, fix string) *violation {
	return &violation{rule: rule, fix: fix}
}
