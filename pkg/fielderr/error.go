package fielderr

import "fmt"

// Error is one problem with one field, in one of two forms.
//
// A key of a source (Key set: a ConfigMap key, an annotation), with the
// value as written and, when the problem lies inside the value's document,
// the path of the field at fault and its value:
//
//	config-autoscaler "stable-window" = "3s": must be within [6s, 1h]; set it to ...
//	annotation "autoscaling.ebb.dev/behavior" = "{...}": scaleUp.selectPolicy = "Fastest": supported values: Max, Min, Disabled; use Max ...
//
// A problem inside a document on its own (Key empty), as the behavior's
// validation reports it before an annotation is known (In places it):
//
//	scaleUp.policies[0].periodSeconds = 0: must be greater than 0 and at most 1800; fix: use a period of 1 to 1800 seconds
//	is empty; fix: remove the annotation ...
type Error struct {
	Source string // where Key lives, e.g. "config-autoscaler" or "annotation"; "" with Key
	Key    string // the key as written, e.g. "stable-window"; "" for a problem inside a document on its own
	Value  string // the key's value as written, or the default when Defaulted
	// Defaulted is true when the key is absent and the rule broken by the
	// default value depends on another key (e.g. max-scale vs max-scale-limit).
	Defaulted bool
	// Field is the path of the field at fault inside the value's document,
	// e.g. "scaleDown.policies[0].type"; "" when the problem is the whole
	// value.
	Field      string
	FieldValue string // the field's value as written (JSON), when Field is set
	Rule       string // what the value must satisfy, e.g. "must be within [6s, 1h]"
	Fix        string // what to change, e.g. "set it to a whole number of seconds between 6s and 1h"
}

// Error renders the problem on one line (see Error's forms).
func (e *Error) Error() string {
	at := ""
	if e.Field != "" {
		at = e.Field + " = " + e.FieldValue + ": "
	}
	if e.Key == "" {
		return fmt.Sprintf("%s%s; fix: %s", at, e.Rule, e.Fix)
	}
	dflt := ""
	if e.Defaulted {
		dflt = " (default)"
	}
	return fmt.Sprintf("%s %q = %q%s: %s%s; %s", e.Source, e.Key, e.Value, dflt, at, e.Rule, e.Fix)
}

// In places a problem found inside a document into the key that carries
// it: a copy of e with Source, Key and Value set.
func (e *Error) In(source, key, value string) *Error {
	c := *e
	c.Source, c.Key, c.Value = source, key, value
	return &c
}

// Errors returns the *Error values inside err (as built by errors.Join,
// nested or not), in order; other errors are skipped. It returns nil for a
// nil error.
func Errors(err error) []*Error {
	if err == nil {
		return nil
	}
	if fe, ok := err.(*Error); ok {
		return []*Error{fe}
	}
	var out []*Error
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			out = append(out, Errors(e)...)
		}
	}
	return out
}
