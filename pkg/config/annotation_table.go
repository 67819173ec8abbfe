package config

import (
	"fmt"
	"math"
	"time"
)

// AnnotationDoc documents one revision template annotation. It is a row of
// the annotation table that also drives parsing and validation.
type AnnotationDoc struct {
	Key     string   // the canonical (kebab-case) key
	Aliases []string // legacy keys, read only when Key is absent
	Type    string   // string, float, int32 or duration
	Example string   // a valid value
	Default string   // where the value comes from when the annotation is absent
	Rule    string   // what a valid value is
	Doc     string   // what it means
}

// annotationKey is one row of the annotation table. apply parses the value
// found under key and checks the annotation's own rule, storing the result
// in p.ann.
type annotationKey struct {
	AnnotationDoc
	apply func(p *revisionParse, key, raw string) *violation
}

// Annotations returns the documentation of every annotation NewRevision
// reads, canonical key first, legacy aliases in Aliases.
func Annotations() []AnnotationDoc {
	out := make([]AnnotationDoc, len(annotationKeys))
	for i, k := range annotationKeys {
		out[i] = k.AnnotationDoc
		out[i].Aliases = append([]string(nil), k.Aliases...)
	}
	return out
}

// annotationKeys is the annotation table. Rules are Knative's
// ValidateAnnotations unless a comment says otherwise.
var annotationKeys = append(coreAnnotationKeys, parkingAnnotations()...)

// coreAnnotationKeys are the annotation table's rows but parking's
// (parking.go).
var coreAnnotationKeys = []annotationKey{
	stringAnn(AnnotationDoc{Key: AnnotationClass, Example: ClassKPA, Default: KeyPodAutoscalerClass,
		Rule: "not empty; a value ending in .knative.dev must be " + ClassKPA + " or " + ClassHPA,
		Doc:  "The autoscaler class of the revision."},
		func(a *parsedAnnotations) *slot[string] { return &a.class },
		func(_ *revisionParse, v string) *violation { return checkClass(v) }),
	stringAnn(AnnotationDoc{Key: AnnotationMetric, Example: MetricConcurrency, Default: "concurrency (KPA), cpu (HPA)",
		Rule: "KPA: concurrency or rps; HPA: concurrency, rps, cpu or memory; other classes: anything",
		Doc:  "The metric the autoscaler scales on."},
		func(a *parsedAnnotations) *slot[string] { return &a.metric }, checkMetric),
	floatAnn(
		AnnotationDoc{
			Key:     AnnotationTarget,
			Example: "10",
			Default: "containerConcurrency, else " + KeyContainerConcurrencyTargetDefault + " (concurrency); " + KeyRequestsPerSecondTargetDefault + " (rps); HPA: " +
				"the KPA's target after utilisation (concurrency, rps), 80 (cpu, memory)",
			Rule: "at least 0.01",
			Doc: "The per-pod capacity (before utilisation) in requests in flight or requests per second; capped at containerConcurrency for the concurrency metric. " +
				"HPA class: the per-pod average to keep (concurrency, rps; utilisation is not applied), or the utilization in percent of the request, rounded up (cpu, " +
				"memory).",
		},
		func(a *parsedAnnotations) *slot[float64] { return &a.target },
		func(_ *revisionParse, f float64) *violation {
			return atLeast(f, targetMin, "set the per-pod target to 0.01 or more, e.g. 10")
		},
	),
	floatAnn(AnnotationDoc{Key: AnnotationTargetUtilizationPercentage, Aliases: []string{AnnotationTargetUtilizationPercentageLegacy},
		Example: "70", Default: KeyContainerConcurrencyTargetPercentage + " (concurrency); 70 (rps)", Rule: "within [1, 100]",
		Doc: "The percentage of the target the autoscaler aims to use."},
		func(a *parsedAnnotations) *slot[float64] { return &a.utilization },
		func(_ *revisionParse, f float64) *violation {
			return within(f, 1, 100, "set a percentage between 1 and 100, e.g. 70")
		}),
	floatAnn(AnnotationDoc{Key: AnnotationTargetBurstCapacity, Aliases: []string{AnnotationTargetBurstCapacityLegacy},
		Example: "211", Default: KeyTargetBurstCapacity, Rule: "at least 0, or exactly -1",
		Doc: "Spare capacity to keep before the activator leaves the request path (-1: always in path)."},
		func(a *parsedAnnotations) *slot[float64] { return &a.tbc },
		func(_ *revisionParse, f float64) *violation { return checkTBC(f) }),
	durationAnn(AnnotationDoc{Key: AnnotationWindow, Example: "60s", Default: KeyStableWindow,
		Rule: "within [6s, 1h], whole seconds", Doc: "The stable window."},
		func(a *parsedAnnotations) *slot[time.Duration] { return &a.window },
		func(_ *revisionParse, d time.Duration) *violation { return checkWindow(d) }),
	floatAnn(AnnotationDoc{Key: AnnotationPanicWindowPercentage, Aliases: []string{AnnotationPanicWindowPercentageLegacy},
		Example: "10", Default: KeyPanicWindowPercentage, Rule: "within [1, 100]",
		Doc: "The panic window as a percentage of the stable window."},
		func(a *parsedAnnotations) *slot[float64] { return &a.panicWindowPct },
		func(_ *revisionParse, f float64) *violation { return checkPanicWindowPercentage(f) }),
	floatAnn(AnnotationDoc{Key: AnnotationPanicThresholdPercentage, Aliases: []string{AnnotationPanicThresholdPercentageLegacy},
		Example: "200", Default: KeyPanicThresholdPercentage, Rule: "within [110, 1000]",
		Doc: "The load, as a percentage of the ready pods' capacity at target, that starts panic mode."},
		func(a *parsedAnnotations) *slot[float64] { return &a.panicThresholdPct },
		func(_ *revisionParse, f float64) *violation {
			return within(f, panicThresholdPercentageMin, panicThresholdPercentageMax, "set a percentage between 110 and 1000, e.g. 200")
		}),
	int32Ann(AnnotationDoc{Key: AnnotationMinScale, Aliases: []string{AnnotationMinScaleLegacy},
		Example: "1", Default: KeyMinScale, Rule: "at least 0; at most the effective max-scale when that is above 0",
		Doc: "The smallest pod count while the revision is reachable."},
		func(a *parsedAnnotations) *slot[int32] { return &a.minScale },
		func(_ *revisionParse, i int32) *violation { return nonNegative(i, "set it to 0 (no minimum) or more") }),
	int32Ann(AnnotationDoc{Key: AnnotationMaxScale, Aliases: []string{AnnotationMaxScaleLegacy},
		Example: "10", Default: KeyMaxScale, Rule: "at least 0 (0 = unlimited); within [1, max-scale-limit] when max-scale-limit is above 0",
		Doc: "The largest pod count; 0 means unlimited."},
		func(a *parsedAnnotations) *slot[int32] { return &a.maxScale }, checkMaxScale),
	int32Ann(AnnotationDoc{Key: AnnotationInitialScale, Aliases: []string{AnnotationInitialScaleLegacy},
		Example: "1", Default: KeyInitialScale, Rule: "at least 1, or 0 when allow-zero-initial-scale is true",
		Doc: "The pod count the revision starts with."},
		func(a *parsedAnnotations) *slot[int32] { return &a.initialScale }, checkInitialScale),
	int32Ann(AnnotationDoc{Key: AnnotationActivationScale, Example: "2", Default: "none (0)",
		Rule: "at least 2; at least min-scale; at most max-scale when max-scale is above 0",
		Doc:  "The smallest pod count when scaling up from zero."},
		func(a *parsedAnnotations) *slot[int32] { return &a.activationScale }, nil),
	durationAnn(AnnotationDoc{Key: AnnotationScaleDownDelay, Aliases: []string{AnnotationScaleDownDelayLegacy},
		Example: "15m", Default: KeyScaleDownDelay, Rule: "within [0s, 1h], whole seconds",
		Doc: "How long load must stay lower before the pod count goes down."},
		func(a *parsedAnnotations) *slot[time.Duration] { return &a.scaleDownDelay },
		func(_ *revisionParse, d time.Duration) *violation {
			if d < 0 || d > windowMax {
				return broken("must be within [0s, 1h]", `set a whole number of seconds between "0s" and "1h"`)
			}
			return wholeSeconds(d, 0)
		}),
	durationAnn(AnnotationDoc{Key: AnnotationScaleToZeroPodRetention, Aliases: []string{AnnotationScaleToZeroPodRetentionLegacy},
		Example: "5m", Default: KeyScaleToZeroPodRetentionPeriod, Rule: "within [0s, 1h]",
		Doc: "The minimum time the last pod stays after traffic stops."},
		func(a *parsedAnnotations) *slot[time.Duration] { return &a.retention },
		func(_ *revisionParse, d time.Duration) *violation {
			if d < 0 || d > windowMax {
				return broken("must be within [0s, 1h]", `set a duration between "0s" and "1h"`)
			}
			return nil
		}),
	stringAnn(AnnotationDoc{Key: AnnotationMetricAggregationAlgorithm, Aliases: []string{AnnotationMetricAggregationAlgorithmLegacy},
		Example: AggregationLinear, Default: AggregationLinear,
		Rule: "with the KPA class: empty, linear, weighted-exponential or weightedExponential",
		Doc:  "How the metric windows are averaged."},
		func(a *parsedAnnotations) *slot[string] { return &a.algorithm }, checkAlgorithm),
	durationAnn(AnnotationDoc{Key: AnnotationProgressDeadline, Example: "600s", Default: "600s",
		Rule: "above 0, whole seconds, at most 2147483647s",
		Doc:  "How long a revision may take to become ready; the activation timeout is this plus 30s."},
		func(a *parsedAnnotations) *slot[time.Duration] { return &a.progressDeadline }, checkProgressDeadline),
	annotation(AnnotationDoc{Key: AnnotationContainerConcurrency, Example: "10", Default: "0 (unlimited)",
		Rule: "within [0, 1000]",
		Doc:  "Ebb only: the per-pod hard limit of requests in flight (Knative's containerConcurrency); 0 means unlimited."},
		"int32", parseContainerConcurrency,
		func(a *parsedAnnotations) *slot[int32] { return &a.containerConcurrency }, nil),
	stringAnn(AnnotationDoc{Key: AnnotationLoadBalancing, Example: LoadBalancingRoundRobin, Default: LoadBalancingAuto,
		Rule: "auto, power-of-two-choices, first-available or round-robin",
		Doc: "Ebb only: how the activator picks a replica. auto is Knative's rule: power-of-two-choices when " +
			"containerConcurrency is 0, first-available up to 3, round-robin above."},
		func(a *parsedAnnotations) *slot[string] { return &a.loadBalancing }, checkLoadBalancing),
	stringAnn(AnnotationDoc{Key: AnnotationUpstreamProtocol, Example: UpstreamH2C,
		Default: "h2c for an app container port named h2c (Knative's rule), else http1",
		Rule:    "http1 or h2c",
		Doc: "Ebb only: the protocol the queue-proxy speaks to the app (QUEUE_UPSTREAM_PROTOCOL). http1: each request as its client " +
			"spoke it; h2c: every request as HTTP/2 cleartext, for an app that speaks only h2c (a gRPC server). Set, it wins over the port name."},
		func(a *parsedAnnotations) *slot[string] { return &a.upstreamProtocol }, checkUpstreamProtocol),
	documentAnn(AnnotationDoc{Key: AnnotationBehavior, Example: `{"scaleDown": {"stabilizationWindowSeconds": 60}}`,
		Default: "none (HPA: Kubernetes' legacy path; KPA: no extra limit)",
		Rule: "an autoscaling/v2 HorizontalPodAutoscalerBehavior in JSON or YAML, as Kubernetes validates it (unknown fields are errors); null is the same as " +
			"no annotation",
		Doc: "Ebb only: Kubernetes HPA scale velocity (stabilization windows, Pods/Percent policies per period, selectPolicy, per-direction tolerance), " +
			"unset fields defaulted as Kubernetes does. HPA class: the behavior of its HPA. KPA class: applied to the KPA's recommendation, after its own rate " +
			"limits and before min/max scale."},
		func(a *parsedAnnotations) *slot[string] { return &a.behavior }),
	documentAnn(AnnotationDoc{Key: AnnotationMetrics, Example: `[{"metric": "concurrency", "target": 10}, {"metric": "cpu", "target": 80}]`,
		Default: "the metric and target annotations",
		Rule: "HPA class only; a JSON or YAML list of {metric, target}: metric concurrency, rps, cpu or memory, " +
			"each at most once (per container); target at least 0.01 " +
			"(concurrency, rps: per pod) or at least 1 (cpu, memory: percent of the request); for cpu and memory, " +
			"averageValue (a quantity per pod such as \"200m\" or \"256Mi\") instead of target, and container to read one container " +
			"(Kubernetes' ContainerResource); not together with the metric or target annotation",
		Doc: "Ebb only: several metrics for the HPA class. Each gives a replica count and the largest wins; a metric that cannot be computed " +
			"blocks scale-down but not scale-up. concurrency and rps are measured by the queue-proxy sidecar; cpu and memory by the platform."},
		func(a *parsedAnnotations) *slot[string] { return &a.metrics }),
	stringAnn(AnnotationDoc{Key: AnnotationScaleToZeroPolicy, Example: ScaleToZeroLearned, Default: KeyScaleToZeroPolicy,
		Rule: "knative or learned",
		Doc: "Ebb only: the revision's scale-to-zero policy (see " + KeyScaleToZeroPolicy + "). learned keeps a histogram of the revision's " +
			"idle gaps and keeps, releases or pre-warms the last pod from it; every such decision gives its reason."},
		func(a *parsedAnnotations) *slot[string] { return &a.scaleToZeroPolicy }, checkScaleToZeroPolicy),
	durationAnn(AnnotationDoc{Key: AnnotationColdStartCost, Example: "3m", Default: "3m",
		Rule: "within [1s, 24h], whole seconds",
		Doc: "Ebb only, learned policy: the idle pod time one avoided cold start is worth. The policy keeps a pod through a range of " +
			"idle time when the share of gaps ending there, times this cost, outweighs the pod time it spends. Higher: fewer cold starts, " +
			"more idle pods."},
		func(a *parsedAnnotations) *slot[time.Duration] { return &a.coldStartCost },
		func(_ *revisionParse, d time.Duration) *violation {
			if d < time.Second || d > 24*time.Hour {
				return broken("must be within [1s, 24h]", `set a duration such as "2m"`)
			}
			return wholeSeconds(d, time.Second)
		}),
	annotation(AnnotationDoc{Key: AnnotationPrewarmLead, Example: "10s", Default: PrewarmLeadAutoText,
		Rule: "auto, or within [0s, 10m], whole seconds",
		Doc: "Ebb only, learned policy: how long before the idle time at which it expects a request the policy starts a pod. " +
			"auto: a tick plus the longest of the latest pod start-ups the policy saw (10s until it has seen one); a duration " +
			"must cover the pod's start-up time and a tick."},
		"duration or auto", parsePrewarmLead,
		func(a *parsedAnnotations) *slot[time.Duration] { return &a.prewarmLead },
		func(_ *revisionParse, d time.Duration) *violation {
			if d == PrewarmLeadAuto {
				return nil
			}
			if d < 0 || d > 10*time.Minute {
				return broken("must be auto or within [0s, 10m]", `remove it (auto) or set a duration such as "10s"`)
			}
			return wholeSeconds(d, 0)
		}),
}

// documentAnn is a row whose value is a JSON or YAML document: the table
// only records it, parseDocuments parses it with the DocumentParser.
func documentAnn(doc AnnotationDoc, field func(*parsedAnnotations) *slot[string]) annotationKey {
	doc.Type = "JSON or YAML"
	return annotationKey{AnnotationDoc: doc, apply: func(p *revisionParse, key, raw string) *violation {
		s := field(&p.ann)
		s.key, s.raw, s.value, s.ok = key, raw, raw, true
		return nil
	}}
}

func checkMaxScale(p *revisionParse, i int32) *violation {
	if v := nonNegative(i, "set it to 0 (unlimited) or more"); v != nil {
		return v
	}
	if limit := p.as.MaxScaleLimit; limit > 0 && (i < 1 || i > limit) {
		return broken(fmt.Sprintf("must be within [1, %d] because max-scale-limit is %d (0 = unlimited is not allowed then)", limit, limit),
			fmt.Sprintf("set max-scale between 1 and %d", limit))
	}
	return nil
}

func checkInitialScale(p *revisionParse, i int32) *violation {
	switch {
	case i < 0:
		return broken("must be at least 0", "set it to 1 or more")
	case i == 0 && !p.as.AllowZeroInitialScale:
		return broken("must be at least 1: this cluster does not allow 0 (allow-zero-initial-scale is false)",
			`set it to 1 or more, or set allow-zero-initial-scale: "true" in config-autoscaler`)
	}
	return nil
}

func checkMetric(p *revisionParse, m string) *violation {
	switch {
	case p.class == ClassKPA && m != MetricConcurrency && m != MetricRPS:
		return broken("must be concurrency or rps with the KPA class", `use "concurrency" (requests in flight) or "rps" (requests per second)`)
	case p.class == ClassHPA && !hpaMetric(m):
		return broken("must be concurrency, rps, cpu or memory with the HPA class (Ebb computes these four)",
			`use "concurrency" or "rps" (per pod), or "cpu" or "memory" (percent of the request)`)
	}
	return nil
}

// checkAlgorithm validates the aggregation algorithm whenever the effective
// class is KPA. Knative only checks it when the class annotation is present
// and KPA, so a typo without the class silently means linear; Ebb rejects it.
func checkAlgorithm(p *revisionParse, s string) *violation {
	if p.class != ClassKPA {
		return nil
	}
	switch s {
	case "", AggregationLinear, AggregationWeightedExponential, aggregationWeightedExponentialAlt:
		return nil
	}
	return broken("must be linear, weighted-exponential or weightedExponential",
		`use "linear" (the default) or "weightedExponential"`)
}

func checkProgressDeadline(_ *revisionParse, d time.Duration) *violation {
	// Kubernetes stores it as whole seconds in an int32
	// (progressDeadlineSeconds); the bound also keeps deadline + 30s from
	// overflowing.
	if d <= 0 || d > math.MaxInt32*time.Second {
		return broken("must be above 0 and at most 2147483647s", `set a duration such as "600s"`)
	}
	return wholeSeconds(d, time.Second)
}
