package config

import (
	"time"

	"ebb.dev/ebb/pkg/behavior"
)

// Class names accepted by the `class` annotation and `pod-autoscaler-class`.
const (
	ClassKPA = "kpa.autoscaling.knative.dev"
	ClassHPA = "hpa.autoscaling.knative.dev"
)

// Metric names of the KPA class.
const (
	MetricConcurrency = "concurrency"
	MetricRPS         = "rps"
)

// Aggregation algorithms of the metric windows.
const (
	AggregationLinear              = "linear"
	AggregationWeightedExponential = "weightedExponential"
)

// Autoscaler is the validated, immutable content of the `config-autoscaler`
// ConfigMap. Fields mirror their ConfigMap keys. Build it with Defaults or
// NewAutoscalerFromMap; never mutate a value that is shared.
type Autoscaler struct {
	EnableScaleToZero bool // enable-scale-to-zero
	// ContainerConcurrencyTargetFraction is container-concurrency-target-percentage
	// as a fraction in (0, 1] (70 -> 0.7; legacy values <= 1 are taken as is).
	ContainerConcurrencyTargetFraction float64
	ContainerConcurrencyTargetDefault  float64       // container-concurrency-target-default
	RPSTargetDefault                   float64       // requests-per-second-target-default
	TargetBurstCapacity                float64       // target-burst-capacity (-1: activator always in path)
	StableWindow                       time.Duration // stable-window
	PanicWindowPercentage              float64       // panic-window-percentage
	PanicThresholdPercentage           float64       // panic-threshold-percentage (as given, 200 = 200%)
	MaxScaleUpRate                     float64       // max-scale-up-rate
	MaxScaleDownRate                   float64       // max-scale-down-rate
	ScaleToZeroGracePeriod             time.Duration // scale-to-zero-grace-period
	ScaleToZeroPodRetentionPeriod      time.Duration // scale-to-zero-pod-retention-period
	ScaleDownDelay                     time.Duration // scale-down-delay
	ActivatorCapacity                  float64       // activator-capacity
	PodAutoscalerClass                 string        // pod-autoscaler-class
	InitialScale                       int32         // initial-scale
	AllowZeroInitialScale              bool          // allow-zero-initial-scale
	MinScale                           int32         // min-scale
	MaxScale                           int32         // max-scale (0 = unlimited)
	MaxScaleLimit                      int32         // max-scale-limit (0 = none)
	// TickInterval is Ebb's `tick-interval` key: how often the decider runs.
	// Knative's ticker is fixed at 2s; the default keeps Knative's behaviour.
	TickInterval time.Duration
	// ScaleToZeroPolicy is Ebb's `scale-to-zero-policy` key: knative (the
	// default) or learned.
	ScaleToZeroPolicy string
	// The HPA class's controller settings (Kubernetes' flags
	// --horizontal-pod-autoscaler-cpu-initialization-period,
	// -initial-readiness-delay, -downscale-stabilization and -tolerance).
	HPACPUInitializationPeriod time.Duration // hpa-cpu-initialization-period
	HPAInitialReadinessDelay   time.Duration // hpa-initial-readiness-delay
	HPADownscaleStabilization  time.Duration // hpa-downscale-stabilization
	HPATolerance               float64       // hpa-tolerance
	// Parking's keys (parking.go): enable-parking, parked-cpu-request (in
	// millicores), parked-memory-request (in bytes), max-parked-duration
	// (0 = no limit) and parked-cost.
	EnableParking            bool
	ParkedCPURequestMilli    int64
	ParkedMemoryRequestBytes int64
	MaxParkedDuration        time.Duration
	ParkedCost               float64
}

// MetricTarget is one metric of the HPA class and its target.
type MetricTarget struct {
	// Metric is concurrency, rps, cpu or memory.
	Metric string `json:"metric"`
	// Target is a per-pod average for concurrency and rps (requests in
	// flight, requests per second); for cpu and memory a utilization in
	// whole percent of the request, or with AverageValue a per-pod average
	// in the resource's unit (cores, bytes).
	Target float64 `json:"target"`
	// AverageValue: a cpu or memory Target is a per-pod average in the
	// resource's unit, not a utilization (Kubernetes' averageValue).
	AverageValue bool `json:"averageValue,omitempty"`
	// Container names the one container a cpu or memory metric reads
	// (Kubernetes' ContainerResource metric); "" is the whole pod.
	Container string `json:"container,omitempty"`
}

// Resource reports whether the metric is a resource one (cpu, memory),
// measured by the platform rather than the queue-proxy.
func (m MetricTarget) Resource() bool {
	return m.Metric == MetricCPU || m.Metric == MetricMemory
}

// Utilization reports whether the metric's target is a percentage of the
// pods' request (cpu, memory without AverageValue) rather than a per-pod
// average.
func (m MetricTarget) Utilization() bool {
	return m.Resource() && !m.AverageValue
}

// Name is how decisions name the metric: the metric, the container in
// brackets for a per-container one, and " average" for a resource
// metric's per-pod average (cpu, cpu[app], memory average).
func (m MetricTarget) Name() string {
	n := m.Metric
	if m.Container != "" {
		n += "[" + m.Container + "]"
	}
	if m.Resource() && m.AverageValue {
		n += " average"
	}
	return n
}

// Revision is the effective, validated configuration of one revision: the
// ConfigMap overridden by the revision template's annotations. It is what the
// decider runs on. Build it with NewRevision.
type Revision struct {
	Class string // autoscaling.knative.dev/class, else pod-autoscaler-class
	// Metric is autoscaling.knative.dev/metric, else DefaultMetric(Class):
	// concurrency or rps for KPA; any non-empty name for HPA (default cpu);
	// anything, possibly "", for other classes.
	Metric string

	// ContainerConcurrency is the per-pod hard limit
	// (autoscaling.ebb.dev/container-concurrency); 0 means unlimited.
	ContainerConcurrency int32
	// Total is the per-pod capacity before utilisation (drives EBC).
	Total float64
	// TargetUtilization is the fraction of Total the decider aims at.
	TargetUtilization float64
	// Target is max(0.01, Total*TargetUtilization): drives pod counts.
	Target float64

	PanicThreshold      float64 // fraction: 2 = 200%
	TargetBurstCapacity float64 // -1, 0 or > 0

	StableWindow time.Duration
	PanicWindow  time.Duration
	Aggregation  string // AggregationLinear or AggregationWeightedExponential

	MaxScaleUpRate   float64
	MaxScaleDownRate float64
	ScaleDownDelay   time.Duration
	ActivationScale  int32 // 0 when not set

	MinScale     int32
	MaxScale     int32 // 0 = unlimited
	InitialScale int32 // the effective initial scale (GetInitialScale)
	// InitialReplicas is the replica count the scale target starts with: the
	// raw initial-scale annotation, else the initial-scale config value.
	InitialReplicas int32

	EnableScaleToZero             bool
	ScaleToZeroGracePeriod        time.Duration
	ScaleToZeroPodRetentionPeriod time.Duration
	// ProgressDeadline is serving.knative.dev/progress-deadline (default
	// 600s); the activation timeout is ProgressDeadline + 30s.
	ProgressDeadline  time.Duration
	ActivatorCapacity float64

	TickInterval time.Duration

	// ScaleToZeroPolicy is autoscaling.ebb.dev/scale-to-zero-policy, else
	// the scale-to-zero-policy key: ScaleToZeroKnative or
	// ScaleToZeroLearned.
	ScaleToZeroPolicy string
	// ColdStartCost and PrewarmLead are the learned policy's parameters
	// (autoscaling.ebb.dev/cold-start-cost, prewarm-lead); the Knative
	// policy does not read them. PrewarmLead is PrewarmLeadAuto (the
	// default) when the policy learns it.
	ColdStartCost, PrewarmLead time.Duration
	// The HPA class's controller settings, from config-autoscaler (see
	// Autoscaler).
	HPACPUInitializationPeriod time.Duration
	HPAInitialReadinessDelay   time.Duration
	HPADownscaleStabilization  time.Duration
	HPATolerance               float64

	// Metrics are the HPA class's metrics and targets:
	// autoscaling.ebb.dev/metrics when given, else the metric and target
	// annotations (see NewRevision). Empty for other classes.
	Metrics []MetricTarget
	// Behavior is autoscaling.ebb.dev/behavior, defaulted and validated;
	// nil when absent or null (the HPA class then takes Kubernetes' legacy
	// path, the KPA class has no extra limit).
	Behavior *behavior.Behavior
	// Parking is the revision's parking (enable-parking and the keys
	// that go with it, overridden by their annotations).
	Parking Parking
}
