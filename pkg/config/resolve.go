package config

import (
	"math"
	"time"
)

// Typed rows of the annotation table: each binds a parser and a rule to
// one slot of parsedAnnotations.

func annotation[T any](doc AnnotationDoc, typ string, parse func(raw, example string) (T, *violation),
	field func(*parsedAnnotations) *slot[T], rule func(*revisionParse, T) *violation) annotationKey {
	doc.Type = typ
	return annotationKey{AnnotationDoc: doc, apply: func(p *revisionParse, key, raw string) *violation {
		s := field(&p.ann)
		s.key, s.raw = key, raw
		v, bad := parse(raw, doc.Example)
		if bad != nil {
			return bad
		}
		if rule != nil {
			if bad := rule(p, v); bad != nil {
				return bad
			}
		}
		s.value, s.ok = v, true
		return nil
	}}
}

func stringAnn(doc AnnotationDoc, field func(*parsedAnnotations) *slot[string], rule func(*revisionParse, string) *violation) annotationKey {
	return annotation(doc, "string", func(raw, _ string) (string, *violation) { return raw, nil }, field, rule)
}

func floatAnn(doc AnnotationDoc, field func(*parsedAnnotations) *slot[float64], rule func(*revisionParse, float64) *violation) annotationKey {
	return annotation(doc, "float", parseFloat, field, rule)
}

func int32Ann(doc AnnotationDoc, field func(*parsedAnnotations) *slot[int32], rule func(*revisionParse, int32) *violation) annotationKey {
	return annotation(doc, "int32", parseInt32, field, rule)
}

func durationAnn(doc AnnotationDoc, field func(*parsedAnnotations) *slot[time.Duration], rule func(*revisionParse, time.Duration) *violation) annotationKey {
	return annotation(doc, "duration", parseDuration, field, rule)
}

// resolve builds the effective settings from valid annotations, as
// Knative's reconciler resolves them (the per-pod total, the utilisation
// and the target; docs/configuration.md gives each setting's source).
// Settings without an annotation come from the ConfigMap.
func (p *revisionParse) resolve() *Revision {
	as, a := p.as, &p.ann
	r := &Revision{
		Class:                         p.class,
		Metric:                        a.metric.or(DefaultMetric(p.class)),
		ContainerConcurrency:          a.containerConcurrency.or(0),
		PanicThreshold:                a.panicThresholdPct.or(as.PanicThresholdPercentage) / 100,
		TargetBurstCapacity:           a.tbc.or(as.TargetBurstCapacity),
		StableWindow:                  a.window.or(as.StableWindow),
		Aggregation:                   normalizeAggregation(a.algorithm.or("")),
		MaxScaleUpRate:                as.MaxScaleUpRate,
		MaxScaleDownRate:              as.MaxScaleDownRate,
		ScaleDownDelay:                a.scaleDownDelay.or(as.ScaleDownDelay),
		ActivationScale:               a.activationScale.or(0),
		MinScale:                      a.minScale.or(as.MinScale),
		MaxScale:                      a.maxScale.or(as.MaxScale),
		InitialScale:                  initialScale(as, &a.initialScale),
		InitialReplicas:               a.initialScale.or(as.InitialScale),
		EnableScaleToZero:             as.EnableScaleToZero,
		ScaleToZeroGracePeriod:        as.ScaleToZeroGracePeriod,
		ScaleToZeroPodRetentionPeriod: a.retention.or(as.ScaleToZeroPodRetentionPeriod),
		ProgressDeadline:              a.progressDeadline.or(DefaultProgressDeadline),
		ActivatorCapacity:             as.ActivatorCapacity,
		TickInterval:                  as.TickInterval,
		ScaleToZeroPolicy:             a.scaleToZeroPolicy.or(as.ScaleToZeroPolicy),
		ColdStartCost:                 a.coldStartCost.or(DefaultColdStartCost),
		PrewarmLead:                   a.prewarmLead.or(DefaultPrewarmLead),
		HPACPUInitializationPeriod:    as.HPACPUInitializationPeriod,
		HPAInitialReadinessDelay:      as.HPAInitialReadinessDelay,
		HPADownscaleStabilization:     as.HPADownscaleStabilization,
		HPATolerance:                  as.HPATolerance,
	}
	r.PanicWindow = panicWindow(r.StableWindow, a.panicWindowPct.or(as.PanicWindowPercentage))
	r.Total, r.TargetUtilization = p.total()
	r.Target = math.Max(targetMin, r.Total*r.TargetUtilization)
	if p.class == ClassHPA {
		r.Metrics = []MetricTarget{p.hpaTarget(r)}
	}
	r.Behavior = p.behaviorDoc
	r.Parking = p.resolveParking()
	if p.metricsDoc != nil {
		r.Metrics, r.Metric = p.metricsDoc, p.metricsDoc[0].Metric
	}
	return r
}

// hpaTarget is the HPA class's target from the metric and target
// annotations, as Knative's HPA reconciler builds its HPA: the target
// annotation as written for concurrency and rps (an averageValue; capped at
// containerConcurrency like the KPA's), rounded up to a whole percent for
// cpu and memory (an averageUtilization). Without a target annotation
// Knative would give the HPA no metric, so Kubernetes' cpu at 80%; Ebb
// keeps the chosen metric: 80% for cpu and memory, and the KPA's per-pod
// target after utilisation for concurrency and rps.
func (p *revisionParse) hpaTarget(r *Revision) MetricTarget {
	m := MetricTarget{Metric: r.Metric}
	t := &p.ann.target
	switch {
	case m.Utilization() && t.ok:
		m.Target = math.Ceil(t.value)
	case m.Utilization():
		m.Target = hpaDefaultUtilization
	case t.ok && m.Metric == MetricConcurrency && r.ContainerConcurrency > 0:
		m.Target = math.Min(t.value, float64(r.ContainerConcurrency))
	case t.ok:
		m.Target = t.value
	default:
		m.Target = r.Target
	}
	return m
}

// total is Knative's ResolveMetricTarget before the final product: the
// per-pod capacity and the utilisation.
func (p *revisionParse) total() (total, utilization float64) {
	as, a := p.as, &p.ann
	metric := a.metric.or(DefaultMetric(p.class))
	cc := a.containerConcurrency.or(0)
	switch metric {
	case MetricRPS:
		total, utilization = as.RPSTargetDefault, rpsTargetUtilization
	default:
		total, utilization = float64(cc), as.ContainerConcurrencyTargetFraction
		if cc == 0 {
			total = as.ContainerConcurrencyTargetDefault
		}
	}
	if a.target.ok {
		total = a.target.value
		if metric == MetricConcurrency && cc > 0 {
			total = math.Min(total, float64(cc))
		}
	}
	if a.utilization.ok {
		utilization = a.utilization.value / 100
	}
	return total, utilization
}

// initialScale is Knative's GetInitialScale: the annotation, unless it is 0
// and the cluster does not allow 0, else the ConfigMap.
func initialScale(as *Autoscaler, s *slot[int32]) int32 {
	if s.ok && (s.value > 0 || as.AllowZeroInitialScale) {
		return s.value
	}
	return as.InitialScale
}

// DefaultMetric is the metric of a class without a metric annotation:
// concurrency for KPA, cpu for HPA, none for other classes.
func DefaultMetric(class string) string {
	switch class {
	case ClassKPA:
		return MetricConcurrency
	case ClassHPA:
		return MetricCPU
	}
	return ""
}

func normalizeAggregation(s string) string {
	if s == AggregationWeightedExponential || s == aggregationWeightedExponentialAlt {
		return AggregationWeightedExponential
	}
	return AggregationLinear
}

// panicWindow is the panic window of a stable window: stable × percentage
// / 100 rounded to the nearest second, halves away from zero, and at least
// BucketSize (45s × 10% = 5s, 60s × 51% = 31s, 10s × 10% = 1s). This is
// Knative's computation, floating point included.
func panicWindow(stable time.Duration, percentage float64) time.Duration {
	w := time.Duration(float64(stable) * percentage / 100).Round(time.Second)
	if w < bucketSize {
		return bucketSize
	}
	return w
}

// ActivationTimeout is how long the revision may stay activating before it
// is scaled to zero: the progress deadline plus Knative's 30s buffer.
func (r *Revision) ActivationTimeout() time.Duration {
	return r.ProgressDeadline + activationTimeoutBuffer
}
