package config

import (
	"errors"
	"fmt"
	"time"

	"ebb.dev/ebb/pkg/behavior"
)

// slot holds one annotation after lookup and parsing.
type slot[T any] struct {
	key   string // the key that was read (canonical or alias); "" when absent
	raw   string
	value T
	ok    bool // present, parsed and within its own rule
}

func (s *slot[T]) present() bool { return s.key != "" }

// or returns the annotation's value when it is valid, else def.
func (s *slot[T]) or(def T) T {
	if s.ok {
		return s.value
	}
	return def
}

// parsedAnnotations are the revision's annotations, one slot each.
type parsedAnnotations struct {
	class, metric, algorithm                                    slot[string]
	target, utilization, tbc, panicWindowPct, panicThresholdPct slot[float64]
	window, scaleDownDelay, retention, progressDeadline         slot[time.Duration]
	minScale, maxScale, initialScale, activationScale           slot[int32]
	containerConcurrency                                        slot[int32]
	behavior, metrics                                           slot[string] // JSON or YAML documents (parseDocuments)
	loadBalancing                                               slot[string] // read by the activator
	upstreamProtocol                                            slot[string] // read by the platforms
	scaleToZeroPolicy                                           slot[string]
	coldStartCost, prewarmLead                                  slot[time.Duration]
	enableParking                                               slot[bool]
	parkedCPU, parkedMemory                                     slot[int64]
	maxParked                                                   slot[time.Duration]
	parkedCost                                                  slot[float64]
}

// revisionParse is the state of one NewRevision call.
type revisionParse struct {
	as    *Autoscaler
	anns  map[string]string
	class string // the effective class: the annotation as written, else pod-autoscaler-class
	ann   parsedAnnotations
	errs  []error
	// behaviorDoc and metricsDoc are the parsed document annotations
	// (parseDocuments).
	behaviorDoc *behavior.Behavior
	metricsDoc  []MetricTarget
}

// NewRevision resolves the effective settings of one revision: the
// ConfigMap as (nil means Defaults()) overridden by the revision template's
// annotations. It validates the annotations as Knative's admission webhook
// does (ValidateAnnotations) with the Ebb extensions described in the
// package documentation, and reports every problem at once: the error is an
// errors.Join of *fielderr.Error.
//
// It is the one entry point from annotations to a Revision, and the
// Revision it returns is complete: docs parses the JSON and YAML document
// annotations (behavior, metrics; see DocumentParser). A nil docs is valid
// for a program that reads no such annotation: one that is present is then
// refused with an error, never ignored.
func NewRevision(as *Autoscaler, annotations map[string]string, docs DocumentParser) (*Revision, error) {
	if as == nil {
		as = Defaults()
	}
	p := &revisionParse{as: as, anns: annotations, class: as.PodAutoscalerClass}
	if c, ok := annotations[AnnotationClass]; ok {
		p.class = c
	}
	p.checkUnknownKeys()
	for i := range annotationKeys {
		p.apply(&annotationKeys[i])
	}
	p.checkMinMax()
	p.checkActivationScale()
	p.checkMetricsAnnotation()
	p.parseDocuments(docs)
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	return p.resolve(), nil
}

// apply looks up the annotation (canonical key first, then its aliases, as
// Knative's kmap.KeyPriority does), parses and checks it.
func (p *revisionParse) apply(k *annotationKey) {
	for _, key := range append([]string{k.Key}, k.Aliases...) {
		if raw, ok := p.anns[key]; ok {
			if v := k.apply(p, key, raw); v != nil {
				p.fail(key, raw, v)
			}
			return
		}
	}
}

func (p *revisionParse) fail(key, raw string, v *violation) {
	p.errs = append(p.errs, annotationError(key, raw, v))
}

// checkMinMax requires the effective min-scale to be at most the effective
// max-scale (when above 0). Knative only compares the two annotations, so
// an annotation min-scale above the ConfigMap's max-scale slips through
// and min silently wins; Ebb rejects it, because the decider relies on
// min <= max.
func (p *revisionParse) checkMinMax() {
	lo, hi := &p.ann.minScale, &p.ann.maxScale
	if (lo.present() && !lo.ok) || (hi.present() && !hi.ok) {
		return // already reported
	}
	minScale, maxScale := lo.or(p.as.MinScale), hi.or(p.as.MaxScale)
	if maxScale == 0 || minScale <= maxScale {
		return
	}
	fix := fmt.Sprintf("lower min-scale to %d or less, or raise max-scale to %d or more (0 = unlimited)", maxScale, minScale)
	switch {
	case hi.present():
		p.fail(hi.key, hi.raw, broken(fmt.Sprintf("max-scale %d is less than min-scale %d", maxScale, minScale), fix))
	default:
		p.fail(lo.key, lo.raw, broken(fmt.Sprintf("min-scale %d is more than max-scale %d (from config-autoscaler)", minScale, maxScale), fix))
	}
}

// checkMetricsAnnotation: autoscaling.ebb.dev/metrics is the HPA class's,
// and it replaces the metric and target annotations, so giving both would
// leave one of them silently unused.
func (p *revisionParse) checkMetricsAnnotation() {
	m := &p.ann.metrics
	if !m.present() {
		return
	}
	if p.class != ClassHPA {
		p.fail(m.key, m.raw, broken(fmt.Sprintf("applies to the HPA class only (the class is %q)", p.class),
			fmt.Sprintf("set %s: %s, or remove it and use %s with the KPA class", AnnotationClass, ClassHPA, AnnotationMetric)))
	}
	if mt := &p.ann.metric; mt.present() {
		p.fail(m.key, m.raw, broken("is given together with "+mt.key+": the metrics list replaces it",
			"move the metric into the list and remove "+mt.key))
	}
	if t := &p.ann.target; t.present() {
		p.fail(m.key, m.raw, broken("is given together with "+t.key+": the metrics list carries the targets",
			"move the target into the list and remove "+t.key))
	}
}

// checkActivationScale is Knative's rule, which reads the min-scale and
// max-scale annotations only (absent or invalid count as 0). Every broken
// part is reported, where Knative stops at the first.
func (p *revisionParse) checkActivationScale() {
	a := &p.ann.activationScale
	if !a.ok {
		return
	}
	lo, hi := p.ann.minScale.or(0), p.ann.maxScale.or(0)
	if a.value < 2 {
		p.fail(a.key, a.raw, broken("must be at least 2", "set it to 2 or more, or remove it (1 is what scaling from zero gives anyway)"))
	}
	if lo > a.value {
		p.fail(a.key, a.raw, broken(fmt.Sprintf("must be at least min-scale %d", lo),
			fmt.Sprintf("raise it to %d or more, or lower min-scale", lo)))
	}
	if hi != 0 && hi < a.value {
		p.fail(a.key, a.raw, broken(fmt.Sprintf("must be at most max-scale %d", hi),
			fmt.Sprintf("lower it to %d or less, or raise max-scale", hi)))
	}
}
