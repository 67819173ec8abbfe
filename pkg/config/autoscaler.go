package config

import (
	"errors"
	"time"

	"ebb.dev/ebb/pkg/fielderr"
)

// Bounds shared by the ConfigMap and the annotations (Knative's values).
const (
	targetMin                   = 0.01 // smallest per-pod target
	windowMin                   = 6 * time.Second
	windowMax                   = time.Hour
	panicWindowPercentageMin    = 1.0
	panicWindowPercentageMax    = 100.0
	panicThresholdPercentageMin = 110.0 // annotation only, see KeyPanicThresholdPercentage
	panicThresholdPercentageMax = 1000.0
	// ContainerConcurrencyMax is Knative's default container-concurrency-max-limit
	// (config-defaults): the largest containerConcurrency a revision may ask for.
	ContainerConcurrencyMax = 1000
	// rpsTargetUtilization is the fixed utilisation of the rps metric
	// (Knative does not expose it).
	rpsTargetUtilization = 0.7
	// DefaultProgressDeadline is config-deployment's progress-deadline default.
	DefaultProgressDeadline = 600 * time.Second
	// activationTimeoutBuffer is added to the progress deadline to get the
	// time a revision may stay activating before it is scaled to zero.
	activationTimeoutBuffer = 30 * time.Second
	// bucketSize is the metric bucket width and the smallest panic window.
	bucketSize = time.Second
)

// KeyDoc documents one config-autoscaler key. It is a row of the key table
// that also drives parsing and validation, so the documentation cannot
// drift from the code.
type KeyDoc struct {
	Name     string // the ConfigMap key
	Type     string // bool, float, int32, duration or string
	Default  string // the value used when the key is absent, as written in the ConfigMap
	Rule     string // what a valid value is
	Doc      string // what the key means
	Override string // the annotation that overrides it per revision; "" if none
}

// configKey is one row of the key table.
type configKey struct {
	KeyDoc
	// parse reads raw into a; it reports syntax problems only.
	parse func(a *Autoscaler, raw string) *violation
	// check is the key's own rule on the parsed value (nil: none).
	check func(a *Autoscaler) *violation
}

// crossRule is a rule that involves several keys. It is skipped when one of
// the keys it reads is already invalid, so one mistake gives one error.
type crossRule struct {
	needs []string
	// check returns the key to blame and the violation, or "" and nil.
	check func(a *Autoscaler, data map[string]string) (string, *violation)
}

// Defaults returns Knative's defaults (knative.dev/serving
// pkg/autoscaler/config) plus Ebb's tick-interval of 2s. Each call returns
// a new value.
func Defaults() *Autoscaler {
	return &Autoscaler{
		EnableScaleToZero:                  true,
		ContainerConcurrencyTargetFraction: 0.7,
		ContainerConcurrencyTargetDefault:  100,
		RPSTargetDefault:                   200,
		TargetBurstCapacity:                211,
		StableWindow:                       60 * time.Second,
		PanicWindowPercentage:              10,
		PanicThresholdPercentage:           200,
		MaxScaleUpRate:                     1000,
		MaxScaleDownRate:                   2,
		ScaleToZeroGracePeriod:             30 * time.Second,
		ScaleToZeroPodRetentionPeriod:      0,
		ScaleDownDelay:                     0,
		ActivatorCapacity:                  100,
		PodAutoscalerClass:                 ClassKPA,
		InitialScale:                       1,
		AllowZeroInitialScale:              false,
		MinScale:                           0,
		MaxScale:                           0,
		MaxScaleLimit:                      0,
		TickInterval:                       2 * time.Second,
		ScaleToZeroPolicy:                  ScaleToZeroKnative,
		HPACPUInitializationPeriod:         5 * time.Minute,
		HPAInitialReadinessDelay:           30 * time.Second,
		HPADownscaleStabilization:          5 * time.Minute,
		HPATolerance:                       0.1,
		EnableParking:                      DefaultEnableParking,
		ParkedCPURequestMilli:              DefaultParkedCPURequest,
		ParkedMemoryRequestBytes:           DefaultParkedMemoryRequest,
		MaxParkedDuration:                  DefaultMaxParkedDuration,
		ParkedCost:                         DefaultParkedCost,
	}
}

// Keys returns the documentation of every config-autoscaler key, in the
// order of deploy/config-autoscaler.yaml.
func Keys() []KeyDoc {
	out := make([]KeyDoc, len(configKeys))
	for i, k := range configKeys {
		out[i] = k.KeyDoc
	}
	return out
}

// NewAutoscalerFromMap parses and validates the data of the
// config-autoscaler ConfigMap. Absent keys take their defaults and unknown
// keys are ignored, as in Knative. Unlike Knative, which stops at the first
// problem, it reports every problem at once: the error is an errors.Join of
// *fielderr.Error, one per broken rule.
func NewAutoscalerFromMap(data map[string]string) (*Autoscaler, error) {
	a := Defaults()
	var errs []error
	invalid := map[string]bool{}
	for _, k := range configKeys {
		raw, present := data[k.Name]
		v := k.apply(a, raw, present)
		if v != nil {
			errs = append(errs, k.fieldError(data, v))
			invalid[k.Name] = true
		}
	}
	for _, r := range crossRules {
		if anyOf(r.needs, invalid) {
			continue
		}
		if key, v := r.check(a, data); v != nil {
			errs = append(errs, configKeyNamed(key).fieldError(data, v))
			invalid[key] = true
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return a, nil
}

// apply parses raw (when present) into a and checks the key's own rule.
func (k *configKey) apply(a *Autoscaler, raw string, present bool) *violation {
	if present {
		if v := k.parse(a, raw); v != nil {
			return v
		}
	}
	if k.check == nil {
		return nil
	}
	return k.check(a)
}

// fieldError attaches v to the key and its value in data (or its default).
func (k *configKey) fieldError(data map[string]string, v *violation) *fielderr.Error {
	raw, present := data[k.Name]
	if !present {
		raw = k.Default
	}
	return &fielderr.Error{Source: sourceConfigMap, Key: k.Name, Value: raw, Defaulted: !present, Rule: v.rule, Fix: v.fix}
}

func configKeyNamed(name string) *configKey {
	for i := range configKeys {
		if configKeys[i].Name == name {
			return &configKeys[i]
		}
	}
	panic("config: no key " + name + " in the key table") // programmer error
}

func anyOf(keys []string, set map[string]bool) bool {
	for _, k := range keys {
		if set[k] {
			return true
		}
	}
	return false
}

// present returns the first of keys that is set in data, else the last one.
func present(data map[string]string, keys ...string) string {
	for _, k := range keys {
		if _, ok := data[k]; ok {
			return k
		}
	}
	return keys[len(keys)-1]
}
