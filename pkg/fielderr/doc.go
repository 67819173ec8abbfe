// Package fielderr is the one error type of Ebb's configuration and how to
// find a misspelt name's intended one.
//
// An Error is one broken rule of one field: a key of the config-autoscaler
// ConfigMap, a revision template annotation, or a field inside the JSON or
// YAML document an annotation carries (the HPA behavior, the metrics list).
// Its text names the field, the value, the rule and the fix. pkg/config,
// pkg/behavior and pkg/config/hpa all report *Error, joined with
// errors.Join so that every problem comes back at once; Errors gets them
// back. EditDistance drives the "did you mean" hints of unknown keys and
// fields.
//
// It is pure: the standard library only, no I/O, no state. It is the
// lowest layer of the pure tier, so every package may import it.
package fielderr
