package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// defaultRevision is the effective configuration of a revision without
// annotations under the default ConfigMap, written out by hand.
func defaultRevision() *Revision {
	return &Revision{
		Class: ClassKPA, Metric: MetricConcurrency,
		Total: 100, TargetUtilization: 0.7, Target: 70,
		PanicThreshold: 2, TargetBurstCapacity: 211,
		StableWindow: 60 * time.Second, PanicWindow: 6 * time.Second, Aggregation: AggregationLinear,
		MaxScaleUpRate: 1000, MaxScaleDownRate: 2,
		InitialScale: 1, InitialReplicas: 1,
		EnableScaleToZero: true, ScaleToZeroGracePeriod: 30 * time.Second,
		ProgressDeadline: 600 * time.Second, ActivatorCapacity: 100, TickInterval: 2 * time.Second,
		ScaleToZeroPolicy: ScaleToZeroKnative, ColdStartCost: DefaultColdStartCost, PrewarmLead: DefaultPrewarmLead,
		HPACPUInitializationPeriod: 5 * time.Minute, HPAInitialReadinessDelay: 30 * time.Second,
		HPADownscaleStabilization: 5 * time.Minute, HPATolerance: 0.1,
		Parking: Parking{CPURequestMilli: DefaultParkedCPURequest, MemoryRequestBytes: DefaultParkedMemoryRequest,
			MaxDuration: DefaultMaxParkedDuration, Cost: DefaultParkedCost},
	}
}

func mustConfig(t *testing.T, data map[string]string) *Autoscaler {
	t.Helper()
	as, err := NewAutoscalerFromMap(data)
	if err != nil {
		t.Fatalf("NewAutoscalerFromMap(%v): %v", data, err)
	}
	return as
}

const kn = KnativeAutoscalingPrefix

type revisionCase struct {
	name     string
	config   map[string]string
	anns     map[string]string
	want     func(r *Revision) // applied to defaultRevision(); nil when errors are expected
	wantErrs []string          // keys named by the errors, in order
}

func runRevisionCases(t *testing.T, tests []revisionCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewRevision(mustConfig(t, tt.config), tt.anns, testDocs)
			if diff := cmp.Diff(tt.wantErrs, errKeys(err)); diff != "" {
				t.Fatalf("error keys (-want +got):\n%s\nerror: %v", diff, err)
			}
			if tt.want == nil {
				return
			}
			want := defaultRevision()
			tt.want(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("NewRevision (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewRevisionNilConfig(t *testing.T) {
	got, err := NewRevision(nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(defaultRevision(), got); diff != "" {
		t.Errorf("NewRevision(nil, nil) (-want +got):\n%s", diff)
	}
}

// TestResolveTarget covers Knative's resolution of the per-pod target:
// total, utilisation and target.
func TestResolveTarget(t *testing.T) {
	cc := AnnotationContainerConcurrency
	runRevisionCases(t, []revisionCase{
		{name: "defaults", want: func(*Revision) {}},
		{name: "containerConcurrency is the total", anns: map[string]string{cc: "10"},
			want: func(r *Revision) { r.ContainerConcurrency, r.Total, r.Target = 10, 10, 7 }},
		{name: "target replaces the total", anns: map[string]string{kn + "target": "50"},
			want: func(r *Revision) { r.Total, r.Target = 50, 35 }},
		{name: "target capped at containerConcurrency", anns: map[string]string{kn + "target": "50", cc: "10"},
			want: func(r *Revision) { r.ContainerConcurrency, r.Total, r.Target = 10, 10, 7 }},
		{name: "target below containerConcurrency", anns: map[string]string{kn + "target": "5", cc: "10"},
			want: func(r *Revision) { r.ContainerConcurrency, r.Total, r.Target = 10, 5, 3.5 }},
		{name: "rps total and fixed utilisation", config: map[string]string{KeyContainerConcurrencyTargetPercentage: "50"},
			anns: map[string]string{kn + "metric": "rps"},
			want: func(r *Revision) { r.Metric, r.Total, r.TargetUtilization, r.Target = MetricRPS, 200, 0.7, 140 }},
		{name: "rps target not capped", anns: map[string]string{kn + "metric": "rps", kn + "target": "50", cc: "10"},
			want: func(r *Revision) { r.Metric, r.ContainerConcurrency, r.Total, r.Target = MetricRPS, 10, 50, 35 }},
		{name: "rps utilisation annotation", anns: map[string]string{kn + "metric": "rps", kn + "target-utilization-percentage": "50"},
			want: func(r *Revision) { r.Metric, r.Total, r.TargetUtilization, r.Target = MetricRPS, 200, 0.5, 100 }},
		{name: "config percentage", config: map[string]string{KeyContainerConcurrencyTargetPercentage: "80", KeyContainerConcurrencyTargetDefault: "50"},
			want: func(r *Revision) { r.Total, r.TargetUtilization, r.Target = 50, 0.8, 40 }},
		{name: "utilisation annotation over config", config: map[string]string{KeyContainerConcurrencyTargetPercentage: "80"},
			anns: map[string]string{kn + "targetUtilizationPercentage": "100"},
			want: func(r *Revision) { r.Total, r.TargetUtilization, r.Target = 100, 1, 100 }},
		{name: "target floored at 0.01", anns: map[string]string{kn + "target": "0.01", kn + "target-utilization-percentage": "1"},
			want: func(r *Revision) { r.Total, r.TargetUtilization, r.Target = 0.01, 0.01, 0.01 }},
		{name: "HPA class: cpu metric, concurrency formula", anns: map[string]string{kn + "class": ClassHPA, cc: "10", kn + "target": "80"},
			want: func(r *Revision) {
				r.Class, r.Metric, r.ContainerConcurrency, r.Total, r.Target = ClassHPA, MetricCPU, 10, 80, 56
				r.Metrics = []MetricTarget{{Metric: MetricCPU, Target: 80}}
			}},
		{name: "HPA class: cpu target rounded up to a whole percent", anns: map[string]string{kn + "class": ClassHPA, kn + "target": "72.5"},
			want: func(r *Revision) {
				r.Class, r.Metric, r.Total, r.Target = ClassHPA, MetricCPU, 72.5, 50.75
				r.Metrics = []MetricTarget{{Metric: MetricCPU, Target: 73}}
			}},
		{name: "HPA class: concurrency target as written, capped at containerConcurrency",
			anns: map[string]string{kn + "class": ClassHPA, kn + "metric": "concurrency", cc: "8", kn + "target": "10"},
			want: func(r *Revision) {
				r.Class, r.ContainerConcurrency, r.Total, r.Target = ClassHPA, 8, 8, 5.6
				r.Metrics = []MetricTarget{{Metric: MetricConcurrency, Target: 8}}
			}},
		{name: "HPA class: rps without target is the KPA's target", anns: map[string]string{kn + "class": ClassHPA, kn + "metric": "rps"},
			want: func(r *Revision) {
				r.Class, r.Metric, r.Total, r.Target = ClassHPA, MetricRPS, 200, 140
				r.Metrics = []MetricTarget{{Metric: MetricRPS, Target: 140}}
			}},
	})
}

func TestResolveWindowsAndScales(t *testing.T) {
	runRevisionCases(t, []revisionCase{
		{name: "45s x 10% = 5s", anns: map[string]string{kn + "window": "45s"},
			want: func(r *Revision) { r.StableWindow, r.PanicWindow = 45*time.Second, 5*time.Second }},
		{name: "60s x 51% = 31s", anns: map[string]string{kn + "panic-window-percentage": "51"},
			want: func(r *Revision) { r.PanicWindow = 31 * time.Second }},
		{name: "10s x 10% = 1s", config: map[string]string{KeyStableWindow: "10s"},
			want: func(r *Revision) { r.StableWindow, r.PanicWindow = 10*time.Second, time.Second }},
		{name: "at least 1s", anns: map[string]string{kn + "window": "6s", kn + "panicWindowPercentage": "1"},
			want: func(r *Revision) { r.StableWindow, r.PanicWindow = 6*time.Second, time.Second }},
		{name: "panic threshold as a fraction", anns: map[string]string{kn + "panic-threshold-percentage": "150"},
			want: func(r *Revision) { r.PanicThreshold = 1.5 }},
		{name: "config panic threshold outside the annotation range", config: map[string]string{KeyPanicThresholdPercentage: "5000"},
			want: func(r *Revision) { r.PanicThreshold = 50 }},
		{name: "annotations override the config", config: map[string]string{
			KeyTargetBurstCapacity: "0", KeyScaleDownDelay: "10s", KeyScaleToZeroPodRetentionPeriod: "1m", KeyMinScale: "1", KeyMaxScale: "9", KeyInitialScale: "2",
		}, anns: map[string]string{
			kn + "target-burst-capacity": "-1", kn + "scale-down-delay": "1h", kn + "scale-to-zero-pod-retention-period": "1.5s",
			kn + "min-scale": "2", kn + "max-scale": "8", kn + "initial-scale": "3", kn + "activation-scale": "4",
		}, want: func(r *Revision) {
			r.TargetBurstCapacity, r.ScaleDownDelay, r.ScaleToZeroPodRetentionPeriod = -1, time.Hour, 1500*time.Millisecond
			r.MinScale, r.MaxScale, r.InitialScale, r.InitialReplicas, r.ActivationScale = 2, 8, 3, 3, 4
		}},
		{name: "config values without annotations", config: map[string]string{
			KeyTargetBurstCapacity: "0", KeyScaleDownDelay: "10s", KeyScaleToZeroPodRetentionPeriod: "1m", KeyMinScale: "1", KeyMaxScale: "9",
			KeyInitialScale: "2", KeyEnableScaleToZero: "false", KeyScaleToZeroGracePeriod: "45s", KeyMaxScaleUpRate: "10",
			KeyMaxScaleDownRate: "4", KeyActivatorCapacity: "50", KeyTickInterval: "1s", KeyPodAutoscalerClass: ClassHPA,
		}, want: func(r *Revision) {
			r.TargetBurstCapacity, r.ScaleDownDelay, r.ScaleToZeroPodRetentionPeriod = 0, 10*time.Second, time.Minute
			r.MinScale, r.MaxScale, r.InitialScale, r.InitialReplicas = 1, 9, 2, 2
			r.EnableScaleToZero, r.ScaleToZeroGracePeriod, r.MaxScaleUpRate, r.MaxScaleDownRate = false, 45*time.Second, 10, 4
			r.ActivatorCapacity, r.TickInterval, r.Class, r.Metric = 50, time.Second, ClassHPA, MetricCPU
			r.Metrics = []MetricTarget{{Metric: MetricCPU, Target: hpaDefaultUtilization}}
		}},
		{name: "initial scale 0 when allowed", config: map[string]string{KeyAllowZeroInitialScale: "true"},
			anns: map[string]string{kn + "initialScale": "0"},
			want: func(r *Revision) { r.InitialScale, r.InitialReplicas = 0, 0 }},
		{name: "progress deadline", anns: map[string]string{AnnotationProgressDeadline: "5s"},
			want: func(r *Revision) { r.ProgressDeadline = 5 * time.Second }},
		{name: "weighted exponential, kebab-case", anns: map[string]string{kn + "metric-aggregation-algorithm": "weighted-exponential"},
			want: func(r *Revision) { r.Aggregation = AggregationWeightedExponential }},
		{name: "weighted exponential, legacy key", anns: map[string]string{kn + "metricAggregationAlgorithm": "weightedExponential"},
			want: func(r *Revision) { r.Aggregation = AggregationWeightedExponential }},
		{name: "unknown algorithm of another class is linear",
			anns: map[string]string{kn + "class": "custom.example.com", kn + "metric-aggregation-algorithm": "median"},
			want: func(r *Revision) { r.Class, r.Metric = "custom.example.com", "" }},
	})
}

func TestLegacyAliases(t *testing.T) {
	runRevisionCases(t, []revisionCase{
		{name: "camelCase keys", anns: map[string]string{
			kn + "minScale": "1", kn + "maxScale": "5", kn + "initialScale": "2", kn + "targetBurstCapacity": "0",
			kn + "panicWindowPercentage": "20", kn + "panicThresholdPercentage": "300", kn + "scaleDownDelay": "5s",
			kn + "scaleToZeroPodRetentionPeriod": "7s", kn + "targetUtilizationPercentage": "50",
		}, want: func(r *Revision) {
			r.MinScale, r.MaxScale, r.InitialScale, r.InitialReplicas, r.TargetBurstCapacity = 1, 5, 2, 2, 0
			r.PanicWindow, r.PanicThreshold, r.ScaleDownDelay = 12*time.Second, 3, 5*time.Second
			r.ScaleToZeroPodRetentionPeriod, r.TargetUtilization, r.Target = 7*time.Second, 0.5, 50
		}},
		{name: "kebab-case wins, the alias is not even parsed", anns: map[string]string{
			kn + "min-scale": "2", kn + "minScale": "lots", kn + "max-scale": "3", kn + "maxScale": "1",
		}, want: func(r *Revision) { r.MinScale, r.MaxScale = 2, 3 }},
		{name: "errors name the alias used", anns: map[string]string{kn + "minScale": "-1"}, wantErrs: []string{kn + "minScale"}},
	})
}

func TestValidateAnnotations(t *testing.T) {
	limit := map[string]string{KeyMaxScaleLimit: "10", KeyMaxScale: "10"}
	runRevisionCases(t, []revisionCase{
		{name: "class in the knative.dev domain", anns: map[string]string{kn + "class": "kpb.autoscaling.knative.dev"}, wantErrs: []string{kn + "class"}},
		{name: "class empty", anns: map[string]string{kn + "class": ""}, wantErrs: []string{kn + "class"}},
		{name: "KPA metric cpu", anns: map[string]string{kn + "metric": "cpu"}, wantErrs: []string{kn + "metric"}},
		{name: "KPA metric from config class", config: map[string]string{KeyPodAutoscalerClass: ClassHPA}, anns: map[string]string{kn + "metric": "memory"},
			want: func(r *Revision) {
				r.Class, r.Metric = ClassHPA, "memory"
				r.Metrics = []MetricTarget{{Metric: MetricMemory, Target: hpaDefaultUtilization}}
			}},
		{name: "HPA metric empty", anns: map[string]string{kn + "class": ClassHPA, kn + "metric": ""}, wantErrs: []string{kn + "metric"}},
		{name: "HPA metric Ebb cannot compute", anns: map[string]string{kn + "class": ClassHPA, kn + "metric": "queue-depth"}, wantErrs: []string{kn + "metric"}},
		{name: "metrics list with the KPA class", anns: map[string]string{AnnotationMetrics: "rps+memory"}, wantErrs: []string{AnnotationMetrics}},
		{name: "metrics list with metric and target",
			anns:     map[string]string{kn + "class": ClassHPA, kn + "metric": "rps", kn + "target": "5", AnnotationMetrics: "rps+memory"},
			wantErrs: []string{AnnotationMetrics, AnnotationMetrics}},
		{name: "behavior and metrics are parsed", anns: map[string]string{kn + "class": ClassHPA, AnnotationMetrics: "rps+memory", AnnotationBehavior: "{}"},
			want: func(r *Revision) {
				r.Class, r.Metric = ClassHPA, MetricRPS
				r.Metrics = testDocs.metrics["rps+memory"]
				r.Behavior = testDocs.behaviors["{}"]
			}},
		{name: "target too small", anns: map[string]string{kn + "target": "0.009"}, wantErrs: []string{kn + "target"}},
		{name: "target not a number", anns: map[string]string{kn + "target": "ten"}, wantErrs: []string{kn + "target"}},
		{name: "utilisation bounds", anns: map[string]string{kn + "target-utilization-percentage": "0.5"}, wantErrs: []string{kn + "target-utilization-percentage"}},
		{name: "utilisation above 100", anns: map[string]string{kn + "targetUtilizationPercentage": "101"}, wantErrs: []string{kn + "targetUtilizationPercentage"}},
		{name: "tbc", anns: map[string]string{kn + "target-burst-capacity": "-2"}, wantErrs: []string{kn + "target-burst-capacity"}},
		{name: "window bounds", anns: map[string]string{kn + "window": "5s"}, wantErrs: []string{kn + "window"}},
		{name: "window precision", anns: map[string]string{kn + "window": "6500ms"}, wantErrs: []string{kn + "window"}},
		{name: "window 1h", anns: map[string]string{kn + "window": "1h"}, want: func(r *Revision) { r.StableWindow, r.PanicWindow = time.Hour, 6*time.Minute }},
		{name: "panic window percentage", anns: map[string]string{kn + "panic-window-percentage": "100.5"}, wantErrs: []string{kn + "panic-window-percentage"}},
		{name: "panic threshold bounds", anns: map[string]string{kn + "panic-threshold-percentage": "109"}, wantErrs: []string{kn + "panic-threshold-percentage"}},
		{name: "panic threshold max", anns: map[string]string{kn + "panic-threshold-percentage": "1000"}, want: func(r *Revision) { r.PanicThreshold = 10 }},
		{name: "panic threshold above max", anns: map[string]string{kn + "panicThresholdPercentage": "1001"}, wantErrs: []string{kn + "panicThresholdPercentage"}},
		{name: "min negative", anns: map[string]string{kn + "min-scale": "-1"}, wantErrs: []string{kn + "min-scale"}},
		{name: "max overflow", anns: map[string]string{kn + "max-scale": "2147483648"}, wantErrs: []string{kn + "max-scale"}},
		{name: "max below min", anns: map[string]string{kn + "min-scale": "3", kn + "max-scale": "2"}, wantErrs: []string{kn + "max-scale"}},
		{name: "max 0 with min: unlimited", anns: map[string]string{kn + "min-scale": "3", kn + "max-scale": "0"}, want: func(r *Revision) { r.MinScale = 3 }},
		{name: "min above config max", config: map[string]string{KeyMaxScale: "3"}, anns: map[string]string{kn + "min-scale": "4"},
			wantErrs: []string{kn + "min-scale"}},
		{name: "max below config min", config: map[string]string{KeyMinScale: "3"}, anns: map[string]string{kn + "max-scale": "2"},
			wantErrs: []string{kn + "max-scale"}},
		{name: "max within limit", config: limit, anns: map[string]string{kn + "max-scale": "10"}, want: func(r *Revision) { r.MaxScale = 10 }},
		{name: "max above limit", config: limit, anns: map[string]string{kn + "max-scale": "11"}, wantErrs: []string{kn + "max-scale"}},
		{name: "unlimited max with a limit", config: limit, anns: map[string]string{kn + "maxScale": "0"}, wantErrs: []string{kn + "maxScale"}},
		{name: "no max annotation with a limit", config: limit, want: func(r *Revision) { r.MaxScale = 10 }},
		{name: "activation scale 2", anns: map[string]string{kn + "activation-scale": "2"}, want: func(r *Revision) { r.ActivationScale = 2 }},
		{name: "activation scale 1", anns: map[string]string{kn + "activation-scale": "1"}, wantErrs: []string{kn + "activation-scale"}},
		{name: "activation scale not a number", anns: map[string]string{kn + "activation-scale": "two"}, wantErrs: []string{kn + "activation-scale"}},
		{name: "activation scale below min", anns: map[string]string{kn + "activation-scale": "3", kn + "min-scale": "4"},
			wantErrs: []string{kn + "activation-scale"}},
		{name: "activation scale above max", anns: map[string]string{kn + "activation-scale": "5", kn + "max-scale": "4"},
			wantErrs: []string{kn + "activation-scale"}},
		{name: "activation scale 1 above max 0 and below min 3: all reported",
			anns: map[string]string{kn + "activation-scale": "1", kn + "min-scale": "3"}, wantErrs: []string{kn + "activation-scale", kn + "activation-scale"}},
		{name: "activation scale vs config bounds is not checked (Knative)", config: map[string]string{KeyMinScale: "5"},
			anns: map[string]string{kn + "activation-scale": "2"}, want: func(r *Revision) { r.MinScale, r.ActivationScale = 5, 2 }},
		{name: "initial scale 0 not allowed", anns: map[string]string{kn + "initial-scale": "0"}, wantErrs: []string{kn + "initial-scale"}},
		{name: "initial scale negative", config: map[string]string{KeyAllowZeroInitialScale: "true"}, anns: map[string]string{kn + "initial-scale": "-1"},
			wantErrs: []string{kn + "initial-scale"}},
		{name: "scale down delay bounds", anns: map[string]string{kn + "scale-down-delay": "1h0m1s"}, wantErrs: []string{kn + "scale-down-delay"}},
		{name: "scale down delay precision", anns: map[string]string{kn + "scaleDownDelay": "1.5s"}, wantErrs: []string{kn + "scaleDownDelay"}},
		{name: "retention bounds", anns: map[string]string{kn + "scale-to-zero-pod-retention-period": "-1s"},
			wantErrs: []string{kn + "scale-to-zero-pod-retention-period"}},
		{name: "retention 1h", anns: map[string]string{kn + "scale-to-zero-pod-retention-period": "1h"},
			want: func(r *Revision) { r.ScaleToZeroPodRetentionPeriod = time.Hour }},
		{name: "algorithm typo without class", anns: map[string]string{kn + "metric-aggregation-algorithm": "weighted_exponential"},
			wantErrs: []string{kn + "metric-aggregation-algorithm"}},
		{name: "algorithm empty", anns: map[string]string{kn + "metric-aggregation-algorithm": ""}, want: func(*Revision) {}},
		{name: "progress deadline 0", anns: map[string]string{AnnotationProgressDeadline: "0s"}, wantErrs: []string{AnnotationProgressDeadline}},
		{name: "progress deadline precision", anns: map[string]string{AnnotationProgressDeadline: "1.5s"}, wantErrs: []string{AnnotationProgressDeadline}},
		{name: "progress deadline overflow", anns: map[string]string{AnnotationProgressDeadline: "2562047h"}, wantErrs: []string{AnnotationProgressDeadline}},
		{name: "container concurrency 1000", anns: map[string]string{AnnotationContainerConcurrency: "1000"},
			want: func(r *Revision) { r.ContainerConcurrency, r.Total, r.Target = 1000, 1000, 700 }},
		{name: "container concurrency 1001", anns: map[string]string{AnnotationContainerConcurrency: "1001"}, wantErrs: []string{AnnotationContainerConcurrency}},
		{name: "container concurrency negative", anns: map[string]string{AnnotationContainerConcurrency: "-1"}, wantErrs: []string{AnnotationContainerConcurrency}},
		{name: "other prefixes are not ours", anns: map[string]string{"autoscaling.knative.devx/foo": "1", "serving.knative.dev/foo": "1", "foo": "bar"},
			want: func(*Revision) {}},
		{name: "unknown keys", anns: map[string]string{kn + "maxscale": "3", EbbAutoscalingPrefix + "concurrency": "3"},
			wantErrs: []string{EbbAutoscalingPrefix + "concurrency", kn + "maxscale"}},
	})
}

func TestNewRevisionAllProblemsAtOnce(t *testing.T) {
	as := mustConfig(t, map[string]string{KeyMaxScaleLimit: "20", KeyMaxScale: "20"})
	_, err := NewRevision(as, map[string]string{
		kn + "minscale":            "2",
		kn + "window":              "3s",
		kn + "metric":              "cpu",
		kn + "maxScale":            "30",
		kn + "initial-scale":       "0",
		kn + "activation-scale":    "1",
		AnnotationProgressDeadline: "10m",
		"example.com/other":        "ignored",
	}, nil)
	want := []string{
		`annotation "autoscaling.knative.dev/minscale" = "2": is not an annotation Ebb knows under autoscaling.knative.dev/ (Knative would ignore it and use the ` +
			`default); did you mean "autoscaling.knative.dev/min-scale"?`,
		`annotation "autoscaling.knative.dev/metric" = "cpu": must be concurrency or rps with the KPA class; use "concurrency" (requests in flight) or "rps" ` +
			`(requests per second)`,
		`annotation "autoscaling.knative.dev/window" = "3s": must be within [6s, 1h]; set it to a whole number of seconds between 6s and 1h`,
		`annotation "autoscaling.knative.dev/maxScale" = "30": must be within [1, 20] because max-scale-limit is 20 (0 = unlimited is not allowed then); set ` +
			`max-scale between 1 and 20`,
		`annotation "autoscaling.knative.dev/initial-scale" = "0": must be at least 1: this cluster does not allow 0 (allow-zero-initial-scale is false); set it ` +
			`to 1 or more, or set allow-zero-initial-scale: "true" in config-autoscaler`,
		`annotation "autoscaling.knative.dev/activation-scale" = "1": must be at least 2; set it to 2 or more, or remove it (1 is what scaling from zero gives ` +
			`anyway)`,
	}
	got := errorLines(err)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestSuggestAnnotation(t *testing.T) {
	tests := []struct{ key, want string }{
		{kn + "minscale", AnnotationMinScale},
		{kn + "MinScale", AnnotationMinScale},
		{kn + "min_scale", AnnotationMinScale},
		{kn + "taget", AnnotationTarget},
		{kn + "windows", AnnotationWindow},
		{kn + "scale-down-dealy", AnnotationScaleDownDelay},
		{kn + "targetBurstCapcity", AnnotationTargetBurstCapacity},
		{kn + "container-concurrency", AnnotationContainerConcurrency},
		{kn + "progress-deadline", AnnotationProgressDeadline},
		{EbbAutoscalingPrefix + "containerConcurrency", AnnotationContainerConcurrency},
		{kn + "foo", ""},
		{kn + "", ""},
		{kn + "max-replicas", ""},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			if got := suggestAnnotation(tt.key); got != tt.want {
				t.Errorf("suggestAnnotation(%q) = %q, want %q", tt.key, got, tt.want)
			}
		})
	}
}

func TestAnnotationsDocumented(t *testing.T) {
	for _, a := range Annotations() {
		if a.Key == "" || a.Type == "" || a.Example == "" || a.Default == "" || a.Rule == "" || a.Doc == "" {
			t.Errorf("annotation %q is not fully documented: %+v", a.Key, a)
		}
		for _, alias := range a.Aliases {
			if strings.ToLower(alias) == alias {
				t.Errorf("alias %q of %q is not a camelCase spelling", alias, a.Key)
			}
		}
		// Every example must be valid on its own (with the config that
		// allows it). The JSON and YAML documents need the real parser:
		// pkg/config/hpa's TestDocumentExamples checks theirs.
		if a.Type == "JSON or YAML" {
			continue
		}
		if _, err := NewRevision(nil, map[string]string{a.Key: a.Example}, nil); err != nil {
			t.Errorf("example of %q is invalid: %v", a.Key, err)
		}
	}
}

func TestLoadBalancingAnnotation(t *testing.T) {
	if _, err := NewRevision(nil, map[string]string{AnnotationLoadBalancing: "round-robin"}, nil); err != nil {
		t.Errorf("round-robin: %v", err)
	}
	_, err := NewRevision(nil, map[string]string{AnnotationLoadBalancing: "random"}, nil)
	if err == nil || !strings.Contains(err.Error(), AnnotationLoadBalancing) || !strings.Contains(err.Error(), "round-robin") {
		t.Errorf("random: %v, want an error naming the annotation and the choices", err)
	}
}

func TestScaleToZeroPolicyAnnotations(t *testing.T) {
	learned := &Autoscaler{}
	*learned = *Defaults()
	learned.ScaleToZeroPolicy = ScaleToZeroLearned
	tests := []struct {
		name    string
		as      *Autoscaler
		ann     map[string]string
		want    []string // policy, cold start cost, prewarm lead
		wantErr []string // substrings of the error
	}{
		{name: "default", want: []string{"knative", "3m0s", "auto"}},
		{name: "the key", as: learned, want: []string{"learned", "3m0s", "auto"}},
		{name: "the annotation wins", as: learned, ann: map[string]string{AnnotationScaleToZeroPolicy: "knative"}, want: []string{"knative", "3m0s", "auto"}},
		{name: "a learned lead", ann: map[string]string{AnnotationPrewarmLead: "auto"}, want: []string{"knative", "3m0s", "auto"}},
		{name: "parameters", ann: map[string]string{AnnotationScaleToZeroPolicy: "learned", AnnotationColdStartCost: "5m", AnnotationPrewarmLead: "3s"},
			want: []string{"learned", "5m0s", "3s"}},
		{name: "unknown policy", ann: map[string]string{AnnotationScaleToZeroPolicy: "hybrid"},
			wantErr: []string{AnnotationScaleToZeroPolicy, `"hybrid"`, "knative or learned"}},
		{name: "cost out of range", ann: map[string]string{AnnotationColdStartCost: "0s"}, wantErr: []string{AnnotationColdStartCost, "[1s, 24h]"}},
		{name: "negative lead", ann: map[string]string{AnnotationPrewarmLead: "-1s"}, wantErr: []string{AnnotationPrewarmLead, "auto or within [0s, 10m]"}},
		{name: "a lead that is neither", ann: map[string]string{AnnotationPrewarmLead: "soon"},
			wantErr: []string{AnnotationPrewarmLead, "must be auto or a duration"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rev, err := NewRevision(tt.as, tt.ann, nil)
			if tt.wantErr != nil {
				for _, w := range tt.wantErr {
					if err == nil || !strings.Contains(err.Error(), w) {
						t.Errorf("error %v: want it to say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := []string{rev.ScaleToZeroPolicy, rev.ColdStartCost.String(), prewarmLeadText(rev.PrewarmLead)}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
