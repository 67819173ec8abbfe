package config

import "time"

// ConfigMapName is the name of the ConfigMap that holds the cluster-wide
// autoscaler settings, as in Knative.
const ConfigMapName = "config-autoscaler"

// Keys of the config-autoscaler ConfigMap. Each is documented in the key
// table (Keys) and in deploy/config-autoscaler.yaml.
const (
	KeyEnableScaleToZero                    = "enable-scale-to-zero"
	KeyContainerConcurrencyTargetPercentage = "container-concurrency-target-percentage"
	KeyContainerConcurrencyTargetDefault    = "container-concurrency-target-default"
	KeyRequestsPerSecondTargetDefault       = "requests-per-second-target-default"
	KeyTargetBurstCapacity                  = "target-burst-capacity"
	KeyStableWindow                         = "stable-window"
	KeyPanicWindowPercentage                = "panic-window-percentage"
	KeyPanicThresholdPercentage             = "panic-threshold-percentage"
	KeyMaxScaleUpRate                       = "max-scale-up-rate"
	KeyMaxScaleDownRate                     = "max-scale-down-rate"
	KeyScaleToZeroGracePeriod               = "scale-to-zero-grace-period"
	KeyScaleToZeroPodRetentionPeriod        = "scale-to-zero-pod-retention-period"
	KeyScaleDownDelay                       = "scale-down-delay"
	KeyActivatorCapacity                    = "activator-capacity"
	KeyPodAutoscalerClass                   = "pod-autoscaler-class"
	KeyInitialScale                         = "initial-scale"
	KeyAllowZeroInitialScale                = "allow-zero-initial-scale"
	KeyMinScale                             = "min-scale"
	KeyMaxScale                             = "max-scale"
	KeyMaxScaleLimit                        = "max-scale-limit"
	// KeyTickInterval is Ebb's extension: the decider's tick period.
	KeyTickInterval = "tick-interval"
	// KeyScaleToZeroPolicy is Ebb's extension: knative or learned
	// (ScaleToZeroPolicies).
	KeyScaleToZeroPolicy = "scale-to-zero-policy"
	// The HPA class's cluster-wide settings, Ebb's extension: the flags of
	// Kubernetes' HPA controller (kube-controller-manager
	// --horizontal-pod-autoscaler-*), with their defaults.
	KeyHPACPUInitializationPeriod = "hpa-cpu-initialization-period"
	KeyHPAInitialReadinessDelay   = "hpa-initial-readiness-delay"
	KeyHPADownscaleStabilization  = "hpa-downscale-stabilization"
	KeyHPATolerance               = "hpa-tolerance"
)

// Annotation prefixes. Every key under these prefixes must be a known
// annotation (see NewRevision): a typo must not silently mean the default.
const (
	KnativeAutoscalingPrefix = "autoscaling.knative.dev/"
	EbbAutoscalingPrefix     = "autoscaling.ebb.dev/"
)

// Revision template annotations. The *Legacy keys are Knative's camelCase
// aliases; when both spellings are present the kebab-case one wins.
const (
	AnnotationClass  = KnativeAutoscalingPrefix + "class"
	AnnotationMetric = KnativeAutoscalingPrefix + "metric"
	AnnotationTarget = KnativeAutoscalingPrefix + "target"

	AnnotationTargetUtilizationPercentage       = KnativeAutoscalingPrefix + "target-utilization-percentage"
	AnnotationTargetUtilizationPercentageLegacy = KnativeAutoscalingPrefix + "targetUtilizationPercentage"
	AnnotationTargetBurstCapacity               = KnativeAutoscalingPrefix + "target-burst-capacity"
	AnnotationTargetBurstCapacityLegacy         = KnativeAutoscalingPrefix + "targetBurstCapacity"

	AnnotationWindow                         = KnativeAutoscalingPrefix + "window"
	AnnotationPanicWindowPercentage          = KnativeAutoscalingPrefix + "panic-window-percentage"
	AnnotationPanicWindowPercentageLegacy    = KnativeAutoscalingPrefix + "panicWindowPercentage"
	AnnotationPanicThresholdPercentage       = KnativeAutoscalingPrefix + "panic-threshold-percentage"
	AnnotationPanicThresholdPercentageLegacy = KnativeAutoscalingPrefix + "panicThresholdPercentage"

	AnnotationMinScale                      = KnativeAutoscalingPrefix + "min-scale"
	AnnotationMinScaleLegacy                = KnativeAutoscalingPrefix + "minScale"
	AnnotationMaxScale                      = KnativeAutoscalingPrefix + "max-scale"
	AnnotationMaxScaleLegacy                = KnativeAutoscalingPrefix + "maxScale"
	AnnotationInitialScale                  = KnativeAutoscalingPrefix + "initial-scale"
	AnnotationInitialScaleLegacy            = KnativeAutoscalingPrefix + "initialScale"
	AnnotationActivationScale               = KnativeAutoscalingPrefix + "activation-scale"
	AnnotationScaleDownDelay                = KnativeAutoscalingPrefix + "scale-down-delay"
	AnnotationScaleDownDelayLegacy          = KnativeAutoscalingPrefix + "scaleDownDelay"
	AnnotationScaleToZeroPodRetention       = KnativeAutoscalingPrefix + "scale-to-zero-pod-retention-period"
	AnnotationScaleToZeroPodRetentionLegacy = KnativeAutoscalingPrefix + "scaleToZeroPodRetentionPeriod"

	AnnotationMetricAggregationAlgorithm       = KnativeAutoscalingPrefix + "metric-aggregation-algorithm"
	AnnotationMetricAggregationAlgorithmLegacy = KnativeAutoscalingPrefix + "metricAggregationAlgorithm"

	// AnnotationProgressDeadline is Knative Serving's per-revision progress
	// deadline; the activation timeout is this plus 30s.
	AnnotationProgressDeadline = "serving.knative.dev/progress-deadline"

	// AnnotationContainerConcurrency is Ebb's extension: the per-pod hard
	// concurrency limit that Knative takes from the revision spec's
	// containerConcurrency field.
	AnnotationContainerConcurrency = EbbAutoscalingPrefix + "container-concurrency"
	// AnnotationLoadBalancing is Ebb's extension read by the activator: how
	// it picks a replica (auto, power-of-two-choices, first-available,
	// round-robin).
	AnnotationLoadBalancing = EbbAutoscalingPrefix + "load-balancing"
	// AnnotationUpstreamProtocol is Ebb's extension read by the platforms
	// (the local platform, the Kubernetes sidecar injector): the protocol
	// the queue-proxy speaks to the app, UpstreamHTTP1 or UpstreamH2C
	// (ResolveUpstreamProtocol). Knative has only the port-name rule.
	AnnotationUpstreamProtocol = EbbAutoscalingPrefix + "upstream-protocol"

	// AnnotationBehavior is Ebb's extension: an autoscaling/v2
	// HorizontalPodAutoscalerBehavior (JSON or YAML) for the HPA and KPA
	// classes. NewRevision parses it with its DocumentParser.
	AnnotationBehavior = EbbAutoscalingPrefix + "behavior"
	// AnnotationMetrics is Ebb's extension: the HPA class's list of metrics
	// and targets (JSON or YAML). NewRevision parses it with its DocumentParser.
	AnnotationMetrics = EbbAutoscalingPrefix + "metrics"

	// AnnotationScaleToZeroPolicy is Ebb's extension: the revision's
	// scale-to-zero policy (ScaleToZeroPolicies).
	AnnotationScaleToZeroPolicy = EbbAutoscalingPrefix + "scale-to-zero-policy"
	// AnnotationColdStartCost is a parameter of the learned policy: the
	// idle replica time one avoided cold start is worth.
	AnnotationColdStartCost = EbbAutoscalingPrefix + "cold-start-cost"
	// AnnotationPrewarmLead is a parameter of the learned policy: how long
	// before a request it expects a replica is started.
	AnnotationPrewarmLead = EbbAutoscalingPrefix + "prewarm-lead"
)

// Values of KeyScaleToZeroPolicy and AnnotationScaleToZeroPolicy.
const (
	// ScaleToZeroKnative is Knative's fixed behaviour: the last replica goes
	// a stable window (plus the grace period, or the retention period)
	// after the traffic stops.
	ScaleToZeroKnative = "knative"
	// ScaleToZeroLearned keeps, releases and pre-warms the last replica
	// from the revision's own history of idle gaps (pkg/scaling/learned).
	ScaleToZeroLearned = "learned"
)

// scaleToZeroPolicies lists the values of the scale-to-zero policy.
var scaleToZeroPolicies = []string{ScaleToZeroKnative, ScaleToZeroLearned}

// Defaults of the learned policy's parameters.
const (
	DefaultColdStartCost = 3 * time.Minute
	// DefaultPrewarmLead is PrewarmLeadAuto: the policy learns the lead
	// from the replica start-ups it sees.
	DefaultPrewarmLead = PrewarmLeadAuto
)

// PrewarmLeadAuto is the value of Revision.PrewarmLead (the annotation's
// "auto") that has the learned policy learn its pre-warm lead: a tick
// plus the longest of the latest replica start-ups it saw (pkg/scaling/learned/lead.go).
const PrewarmLeadAuto time.Duration = -1

// PrewarmLeadAutoText is how the annotation writes PrewarmLeadAuto.
const PrewarmLeadAutoText = "auto"

// prewarmLeadText writes a PrewarmLead as the annotation does.
func prewarmLeadText(d time.Duration) string {
	if d == PrewarmLeadAuto {
		return PrewarmLeadAutoText
	}
	return d.String()
}

// Values accepted by the metric-aggregation-algorithm annotation besides
// AggregationLinear and AggregationWeightedExponential.
const (
	// aggregationWeightedExponentialAlt is the kebab-case spelling of
	// AggregationWeightedExponential; both mean the same.
	aggregationWeightedExponentialAlt = "weighted-exponential"
)

// Resource metrics of the HPA class; MetricCPU is its default metric.
const (
	MetricCPU    = "cpu"
	MetricMemory = "memory"
)

// hpaDefaultUtilization is the cpu and memory target of the HPA class
// without a target annotation: Kubernetes' default metric, cpu at 80%.
const hpaDefaultUtilization = 80
