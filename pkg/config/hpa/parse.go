package hpa

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"sigs.k8s.io/yaml"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/fielderr"
)

// AnnotationBehavior is Ebb's annotation carrying an HPA behavior, written as
// the `spec.behavior` of an autoscaling/v2 HorizontalPodAutoscaler, in JSON
// or YAML.
const AnnotationBehavior = config.AnnotationBehavior

// maxBehaviorBytes bounds the annotation: a behavior is a few hundred bytes,
// and the bound keeps a hostile value from costing the parser much.
const maxBehaviorBytes = 32 << 10

// ParseBehavior parses the value of the autoscaling.ebb.dev/behavior
// annotation: JSON or YAML, strict (an unknown or misspelt field, including
// a difference in case, is an error naming it; so is a duplicate key), then
// defaulted (DefaultBehavior) and validated (ValidateBehavior). Every problem
// comes back at once, each naming the annotation, the field, what is wrong
// and how to fix it.
//
// "null" parses to a nil behavior, which selects Kubernetes' legacy path; an
// empty or blank value is an error (remove the annotation instead, or write
// {} for Kubernetes' default behavior).
func ParseBehavior(s string) (*autoscalingv2.HorizontalPodAutoscalerBehavior, error) {
	b, problems := parseBehavior(s)
	if len(problems) > 0 {
		return nil, annotationErrors(problems)
	}
	return b, nil
}

// parseBehavior is ParseBehavior with its problems unrendered, so that
// DocumentParser can hand them to config.NewRevision.
func parseBehavior(s string) (*autoscalingv2.HorizontalPodAutoscalerBehavior, []*fielderr.Error) {
	if strings.TrimSpace(s) == "" {
		return nil, whole("is empty", "remove the annotation for the legacy behavior, or write {} for Kubernetes' default behavior")
	}
	if len(s) > maxBehaviorBytes {
		return nil, whole(fmt.Sprintf("is %d bytes, more than the %d a behavior can need", len(s), maxBehaviorBytes), "write only scaleUp and scaleDown")
	}
	obj, isNull, problems := decodeObject(s, behaviorFields,
		"must be an object with scaleUp and/or scaleDown", `write e.g. {"scaleUp": {"stabilizationWindowSeconds": 0}}`)
	if isNull || obj == nil {
		return nil, problems
	}
	// Unknown fields were reported and removed: the rest is still checked,
	// so that every problem comes back at once.
	var b autoscalingv2.HorizontalPodAutoscalerBehavior
	if err := decodeJSON(obj, &b); err != nil {
		return nil, append(problems, typeError(err))
	}
	d := DefaultBehavior(&b)
	problems = append(problems, fielderr.Errors(ValidateBehavior(d))...)
	if len(problems) > 0 {
		return nil, problems
	}
	return d, nil
}

// decodeObject turns s (JSON or YAML) into JSON and checks its fields
// against shape, case-sensitively; with a nil shape it wants a list (whose
// entries the caller checks). isNull reports "null". Any other top-level
// value is reported with notObject and fix.
func decodeObject(s string, shape fields, notObject, fix string) (js []byte, isNull bool, problems []*fielderr.Error) {
	js, err := yaml.YAMLToJSONStrict([]byte(s))
	if err != nil {
		return nil, false, whole("is not valid JSON or YAML: "+oneLine(err), `write an object such as {"scaleDown": {"stabilizationWindowSeconds": 60}}`)
	}
	var generic any
	if err := decodeJSON(js, &generic); err != nil {
		return nil, false, whole("cannot be read: "+oneLine(err), "write one JSON or YAML value")
	}
	switch v := generic.(type) {
	case nil:
		return nil, true, nil
	case map[string]any:
		if shape == nil {
			break // the caller wants a list
		}
		if problems = unknownFields(v, shape, ""); len(problems) > 0 {
			js, _ = json.Marshal(v) // without the unknown fields, which unknownFields removed
		}
		return js, false, problems
	case []any:
		if shape == nil {
			return js, false, nil
		}
	}
	return nil, false, whole(notObject, fix)
}

// whole is one problem with the whole value.
func whole(rule, fix string) []*fielderr.Error {
	return []*fielderr.Error{{Rule: rule, Fix: fix}}
}

func decodeJSON(js []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func annotationErrors(problems []*fielderr.Error) error {
	wrapped := make([]error, len(problems))
	for i, p := range problems {
		wrapped[i] = fmt.Errorf("annotation %s: %w", AnnotationBehavior, p)
	}
	return errors.Join(wrapped...)
}

// typeError turns encoding/json's type mismatch into a *fielderr.Error.
func typeError(err error) *fielderr.Error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &fielderr.Error{Field: te.Field, FieldValue: "a " + te.Value,
			Rule: "must be " + te.Type.String(),
			Fix:  "write integers for seconds and values, a string for type and selectPolicy, and a quantity such as \"0.1\" for tolerance"}
	}
	return &fielderr.Error{Rule: "cannot be decoded: " + oneLine(err), Fix: "write tolerance as a quantity such as \"0.05\""}
}

// oneLine keeps a parser's message on one line, so that each line of a
// joined error names the annotation.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// fields is the shape of the behavior object: the known keys of an object,
// each with the shape of its value (nil for a scalar). A list value is
// checked element by element against the same shape.
type fields map[string]fields

var (
	policyFields   = fields{"type": nil, "value": nil, "periodSeconds": nil}
	rulesFields    = fields{"stabilizationWindowSeconds": nil, "selectPolicy": nil, "policies": policyFields, "tolerance": nil}
	behaviorFields = fields{"scaleUp": rulesFields, "scaleDown": rulesFields}
)

// unknownFields walks v and reports every key that shape does not know,
// case-sensitively as the Kubernetes API does (encoding/json alone would
// accept "ScaleUp"), and removes it from obj so that the rest can still be
// decoded and checked.
func unknownFields(obj map[string]any, shape fields, path string) []*fielderr.Error {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []*fielderr.Error
	for _, k := range keys {
		child, known := shape[k]
		if !known {
			errs = append(errs, unknownField(path+fieldName(k), obj[k], k, shape))
			delete(obj, k)
			continue
		}
		errs = append(errs, walk(obj[k], child, path+k)...)
	}
	return errs
}

func walk(v any, shape fields, path string) []*fielderr.Error {
	if shape == nil {
		return nil
	}
	switch t := v.(type) {
	case map[string]any:
		return unknownFields(t, shape, path+".")
	case []any:
		var errs []*fielderr.Error
		for i, e := range t {
			errs = append(errs, walk(e, shape, fmt.Sprintf("%s[%d]", path, i))...)
		}
		return errs
	}
	return nil // a type mismatch: the typed decode reports it
}

// fieldName quotes a key that is not a plain identifier, so that a hostile
// key cannot break the error's line or look like a path.
func fieldName(k string) string {
	for _, r := range k {
		if !(r == '_' || r == '-' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
			return strconv.Quote(k)
		}
	}
	if k == "" {
		return `""`
	}
	return k
}

func unknownField(path string, v any, key string, shape fields) *fielderr.Error {
	value, _ := json.Marshal(v)
	if len(value) > 40 {
		value = append(value[:37], "..."...)
	}
	known := make([]string, 0, len(shape))
	for k := range shape {
		known = append(known, k)
	}
	sort.Strings(known)
	fix := "use one of " + strings.Join(known, ", ")
	if s := closest(key, known); s != "" {
		fix = fmt.Sprintf("did you mean %q? (names are case-sensitive)", s)
	}
	return &fielderr.Error{Field: path, FieldValue: string(value), Rule: "unknown field", Fix: fix}
}

// closest is the known name key most likely meant: the same but for case,
// or at most two edits away.
func closest(key string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return k
		}
		if d := fielderr.EditDistance(strings.ToLower(key), strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}
