package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/decider"
)

// maxSeconds bounds a scenario's length (t of the last sample): a year of
// seconds. It keeps a typo in `t` from turning into billions of decisions.
const maxSeconds = 365 * 24 * 3600

// Scenario is a parsed scenario file.
type Scenario struct {
	// Description says what the scenario shows (optional, Ebb's extension).
	Description string
	// Config is the config-autoscaler data.
	Config map[string]string
	// Annotations are the revision template's annotations.
	Annotations map[string]string
	// ContainerConcurrency is the per-pod hard limit; 0 means unlimited.
	ContainerConcurrency int32
	// StartInactive (Ebb's extension, "startInactive": true) starts the
	// revision inactive at zero instead of activating at its initial
	// scale, as the autoscaler restarts the decider of a revision already
	// scaled to zero; its recordings of such a revision say so, so that
	// they replay to the same decisions.
	StartInactive bool
	Samples       []Sample
}

// Sample is one second of a trace.
type Sample struct {
	T int64
	// HasMetric is false when the sample records no metric (neither
	// concurrency nor rps); a missing one of the two is recorded as 0.
	HasMetric        bool
	Concurrency, RPS float64
	Ready            *int32 // nil: keep the previous value
	Reachable        *bool  // nil: keep the previous value
	// Pods are the pods at that second with their own samples; nil when the
	// sample lists none (the HPA class then derives them from the totals).
	Pods []decider.PodSample
}

type rawScenario struct {
	Description          string                     `json:"description"`
	Config               map[string]json.RawMessage `json:"config"`
	Annotations          map[string]json.RawMessage `json:"annotations"`
	ContainerConcurrency *json.Number               `json:"containerConcurrency"`
	StartInactive        bool                       `json:"startInactive"`
	Samples              []rawSample                `json:"samples"`
}

type rawSample struct {
	T           *json.Number `json:"t"`
	Concurrency *float64     `json:"concurrency"`
	RPS         *float64     `json:"rps"`
	Ready       *json.Number `json:"ready"`
	Reachable   *bool        `json:"reachable"`
	Pods        []rawPod     `json:"pods"`
}

// Parse reads a scenario from JSON. Every problem is reported at once.
func Parse(data []byte) (*Scenario, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var raw rawScenario
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("reading scenario: %w (see docs/scenarios.md for the format)", err)
	}
	if dec.More() {
		return nil, errors.New("reading scenario: more than one JSON document; a scenario file holds exactly one object")
	}
	var errs []error
	s := &Scenario{Description: raw.Description, StartInactive: raw.StartInactive}
	s.Config, errs = stringMap("config", raw.Config, errs)
	s.Annotations, errs = stringMap("annotations", raw.Annotations, errs)
	if raw.ContainerConcurrency != nil {
		cc, err := wholeNumber(*raw.ContainerConcurrency, 0, 1000)
		if err != nil {
			errs = append(errs, fmt.Errorf("containerConcurrency = %s: %w", raw.ContainerConcurrency, err))
		}
		s.ContainerConcurrency = int32(cc)
	}
	s.Samples, errs = samples(raw.Samples, errs)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}

// stringMap accepts the values of a ConfigMap's data or of annotations:
// strings, and for convenience numbers and booleans, taken as written.
func stringMap(field string, in map[string]json.RawMessage, errs []error) (map[string]string, []error) {
	out := make(map[string]string, len(in))
	for k, raw := range in {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			out[k] = s
			continue
		}
		text := string(bytes.TrimSpace(raw))
		if _, err := strconv.ParseFloat(text, 64); err == nil || text == "true" || text == "false" {
			out[k] = text
			continue
		}
		errs = append(errs, fmt.Errorf("%s %q = %s: must be a string (as in a ConfigMap or an annotation); quote the value", field, k, text))
	}
	return out, errs
}

// wholeNumber parses a JSON number that must be an integer in [lo, hi].
func wholeNumber(n json.Number, lo, hi int64) (int64, error) {
	v, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("must be a whole number in [%d, %d]", lo, hi)
	}
	if v < lo || v > hi {
		return 0, fmt.Errorf("must be within [%d, %d]", lo, hi)
	}
	return v, nil
}

func samples(raw []rawSample, errs []error) ([]Sample, []error) {
	if len(raw) == 0 {
		return nil, append(errs, errors.New("samples: none given; a scenario needs at least one sample, e.g. {\"t\": 0, \"concurrency\": 1, \"ready\": 1}"))
	}
	out := make([]Sample, len(raw))
	prev := int64(-1)
	for i, r := range raw {
		s, err := sample(i, r, prev)
		errs = append(errs, err...)
		out[i] = s
		if s.T > prev {
			prev = s.T
		}
	}
	return out, errs
}

func sample(i int, r rawSample, prev int64) (Sample, []error) {
	var errs []error
	s := Sample{Reachable: r.Reachable}
	if r.T == nil {
		errs = append(errs, fmt.Errorf("samples[%d]: t is missing; give the whole second the sample belongs to", i))
	} else if t, err := wholeNumber(*r.T, 0, maxSeconds); err != nil {
		errs = append(errs, fmt.Errorf("samples[%d].t = %s: %w", i, r.T, err))
	} else if t <= prev {
		errs = append(errs, fmt.Errorf("samples[%d].t = %d: must be greater than the previous sample's t (%d); samples are strictly increasing, one per second", i,
			t, prev))
	} else {
		s.T = t
	}
	if r.Concurrency != nil || r.RPS != nil {
		s.HasMetric = true
		s.Concurrency, errs = nonNegative(i, "concurrency", r.Concurrency, errs)
		s.RPS, errs = nonNegative(i, "rps", r.RPS, errs)
	}
	if r.Ready != nil {
		n, err := wholeNumber(*r.Ready, 0, 1<<31-1)
		if err != nil {
			errs = append(errs, fmt.Errorf("samples[%d].ready = %s: %w", i, r.Ready, err))
		}
		ready := int32(n)
		s.Ready = &ready
	}
	if r.Pods != nil {
		errs = append(errs, s.takePods(i, r.Pods)...)
	}
	return s, errs
}

func nonNegative(i int, name string, v *float64, errs []error) (float64, []error) {
	if v == nil {
		return 0, errs
	}
	if *v < 0 {
		return 0, append(errs, fmt.Errorf("samples[%d].%s = %v: must be >= 0", i, name, *v))
	}
	return *v, errs
}

// settings validates the scenario's config and returns it with the
// revision's annotations. The top-level containerConcurrency is the
// autoscaling.ebb.dev/container-concurrency annotation; giving both with
// different values is an error.
func (s *Scenario) settings() (*config.Autoscaler, map[string]string, error) {
	as, err := config.NewAutoscalerFromMap(s.Config)
	if err != nil {
		return nil, nil, err
	}
	ann := make(map[string]string, len(s.Annotations)+1)
	for k, v := range s.Annotations {
		ann[k] = v
	}
	if s.ContainerConcurrency != 0 {
		cc := strconv.Itoa(int(s.ContainerConcurrency))
		if v, ok := ann[config.AnnotationContainerConcurrency]; ok && v != cc {
			return nil, nil, fmt.Errorf("containerConcurrency = %s but annotation %q = %q: give the hard limit once", cc, config.AnnotationContainerConcurrency, v)
		}
		ann[config.AnnotationContainerConcurrency] = cc
	}
	return as, ann, nil
}

// Revision validates the scenario's config and annotations and returns the
// revision's effective settings: config.NewRevision on Settings, docs
// parsing the behavior and metrics annotations (hpa.DocumentParser{}; see
// config.DocumentParser).
func (s *Scenario) Revision(docs config.DocumentParser) (*config.Revision, error) {
	as, ann, err := s.settings()
	if err != nil {
		return nil, err
	}
	return config.NewRevision(as, ann, docs)
}
