package config

import (
	"math"
	"strings"
	"testing"
	"time"

	"ebb.dev/ebb/pkg/fielderr"
)

// finite reports whether every float is a usable number.
func finite(fs ...float64) bool {
	for _, f := range fs {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return false
		}
	}
	return true
}

func whole(d time.Duration) bool { return d%time.Second == 0 }

// autoscalerProblems restates every ConfigMap rule independently of the
// key table and returns the ones a *valid* Autoscaler breaks.
func autoscalerProblems(a *Autoscaler) []string {
	var p []string
	check := func(ok bool, what string) {
		if !ok {
			p = append(p, what)
		}
	}
	check(finite(a.ContainerConcurrencyTargetFraction, a.ContainerConcurrencyTargetDefault, a.RPSTargetDefault,
		a.TargetBurstCapacity, a.PanicWindowPercentage, a.PanicThresholdPercentage, a.MaxScaleUpRate,
		a.MaxScaleDownRate, a.ActivatorCapacity), "finite floats")
	check(a.ContainerConcurrencyTargetFraction > 0 && a.ContainerConcurrencyTargetFraction <= 1, "fraction in (0, 1]")
	check(a.ContainerConcurrencyTargetFraction*a.ContainerConcurrencyTargetDefault >= targetMin, "target >= 0.01")
	check(a.RPSTargetDefault >= targetMin, "rps default >= 0.01")
	check(a.TargetBurstCapacity >= 0 || a.TargetBurstCapacity == -1, "tbc")
	check(a.StableWindow >= windowMin && a.StableWindow <= windowMax && whole(a.StableWindow), "stable window")
	check(a.PanicWindowPercentage >= 1 && a.PanicWindowPercentage <= 100, "panic window percentage")
	check(a.PanicThresholdPercentage > 0, "panic threshold > 0")
	check(a.MaxScaleUpRate > 1 && a.MaxScaleDownRate > 1, "scale rates > 1")
	check(a.ScaleToZeroGracePeriod > 0, "grace > 0")
	check(a.ScaleToZeroPodRetentionPeriod >= 0, "retention >= 0")
	check(a.ScaleDownDelay >= 0 && whole(a.ScaleDownDelay), "scale-down delay")
	check(a.ActivatorCapacity >= 1, "activator capacity >= 1")
	check(a.PodAutoscalerClass != "", "class not empty")
	check(a.InitialScale >= 1 || (a.InitialScale == 0 && a.AllowZeroInitialScale), "initial scale")
	check(a.MinScale >= 0 && a.MaxScale >= 0 && a.MaxScaleLimit >= 0, "scales >= 0")
	check(a.MaxScale == 0 || a.MinScale <= a.MaxScale, "min <= max")
	check(a.MaxScaleLimit == 0 || (a.MaxScale >= 1 && a.MaxScale <= a.MaxScaleLimit), "max within limit")
	check(a.TickInterval >= time.Second && whole(a.TickInterval) && a.TickInterval <= a.StableWindow, "tick interval")
	return p
}

// checkFieldErrors requires err to be made of well-formed FieldErrors.
func checkFieldErrors(t *testing.T, err error, source string) {
	t.Helper()
	fes := fielderr.Errors(err)
	if len(fes) == 0 {
		t.Fatalf("error %q holds no *FieldError", err)
	}
	for _, fe := range fes {
		if fe.Source != source || fe.Key == "" || fe.Rule == "" || fe.Fix == "" {
			t.Errorf("incomplete FieldError %+v", fe)
		}
		if strings.Contains(fe.Rule, "\n") || strings.Contains(fe.Fix, "\n") {
			t.Errorf("FieldError is not one line: %q", fe.Error())
		}
	}
}

func FuzzNewAutoscalerFromMap(f *testing.F) {
	keys := Keys()
	for i, k := range keys {
		f.Add(uint8(i), k.Default, uint8(i+1), "", uint8(i+2), "x")
	}
	f.Add(uint8(5), "3s", uint8(20), "5s", uint8(15), "0")
	f.Add(uint8(17), "5", uint8(18), "3", uint8(19), "4")
	f.Fuzz(func(t *testing.T, k1 uint8, v1 string, k2 uint8, v2 string, k3 uint8, v3 string) {
		data := map[string]string{
			keys[int(k1)%len(keys)].Name: v1,
			keys[int(k2)%len(keys)].Name: v2,
			keys[int(k3)%len(keys)].Name: v3,
		}
		a, err := NewAutoscalerFromMap(data)
		if err != nil {
			checkFieldErrors(t, err, sourceConfigMap)
			return
		}
		if p := autoscalerProblems(a); len(p) > 0 {
			t.Errorf("NewAutoscalerFromMap(%q) accepted a config that breaks %v: %+v", data, p, a)
		}
	})
}

// revisionProblems restates the invariants of a valid Revision.
func revisionProblems(as *Autoscaler, r *Revision) []string {
	var p []string
	check := func(ok bool, what string) {
		if !ok {
			p = append(p, what)
		}
	}
	check(finite(r.Total, r.Target, r.TargetUtilization, r.PanicThreshold, r.TargetBurstCapacity), "finite floats")
	check(r.Target >= targetMin && r.Total > 0, "target >= 0.01, total > 0")
	check(r.TargetUtilization > 0 && r.TargetUtilization <= 1, "utilisation in (0, 1]")
	check(r.Class != "", "class")
	check(r.Class != ClassKPA || r.Metric == MetricConcurrency || r.Metric == MetricRPS, "KPA metric")
	check(r.Class != ClassHPA || r.Metric != "", "HPA metric")
	check(r.PanicThreshold > 0, "panic threshold")
	check(r.TargetBurstCapacity >= 0 || r.TargetBurstCapacity == -1, "tbc")
	check(r.StableWindow >= windowMin && r.StableWindow <= windowMax && whole(r.StableWindow), "stable window")
	check(r.PanicWindow >= time.Second && r.PanicWindow <= r.StableWindow && whole(r.PanicWindow), "panic window")
	check(r.Aggregation == AggregationLinear || r.Aggregation == AggregationWeightedExponential, "aggregation")
	check(r.ScaleDownDelay >= 0 && whole(r.ScaleDownDelay), "scale-down delay")
	check(r.ScaleToZeroPodRetentionPeriod >= 0, "retention")
	check(r.ActivationScale == 0 || r.ActivationScale >= 2, "activation scale")
	check(r.MinScale >= 0 && r.MaxScale >= 0, "scales >= 0")
	check(r.MaxScale == 0 || r.MinScale <= r.MaxScale, "min <= max")
	check(as.MaxScaleLimit == 0 || (r.MaxScale >= 1 && r.MaxScale <= as.MaxScaleLimit), "max within limit")
	check(r.InitialScale >= 1 || (r.InitialScale == 0 && as.AllowZeroInitialScale), "initial scale")
	check(r.InitialReplicas == r.InitialScale, "initial replicas")
	check(r.ContainerConcurrency >= 0 && r.ContainerConcurrency <= ContainerConcurrencyMax, "container concurrency")
	check(r.ContainerConcurrency == 0 || r.Metric != MetricConcurrency || r.Total <= float64(r.ContainerConcurrency), "total capped")
	check(r.ProgressDeadline > 0 && r.ActivationTimeout() > r.ProgressDeadline, "progress deadline")
	return p
}

func FuzzNewRevision(f *testing.F) {
	var keys []string
	for _, a := range Annotations() {
		keys = append(keys, a.Key)
		keys = append(keys, a.Aliases...)
	}
	configs := []*Autoscaler{Defaults()}
	for _, data := range []map[string]string{
		{KeyMaxScaleLimit: "10", KeyMaxScale: "5", KeyMinScale: "1"},
		{KeyAllowZeroInitialScale: "true", KeyInitialScale: "0", KeyPodAutoscalerClass: ClassHPA},
		{KeyContainerConcurrencyTargetPercentage: "1", KeyContainerConcurrencyTargetDefault: "0.01", KeyStableWindow: "6s"},
	} {
		as, err := NewAutoscalerFromMap(data)
		if err != nil {
			f.Fatal(err)
		}
		configs = append(configs, as)
	}
	for i, a := range Annotations() {
		f.Add(uint8(i), uint8(i), a.Example, uint8(i+3), a.Example, "", "")
	}
	f.Add(uint8(1), uint8(8), "3", uint8(10), "2", kn+"minscale", "1")
	f.Add(uint8(2), uint8(11), "0", uint8(5), "-1", EbbAutoscalingPrefix+"cc", "1")
	f.Fuzz(func(t *testing.T, cfg, k1 uint8, v1 string, k2 uint8, v2, k3, v3 string) {
		as := configs[int(cfg)%len(configs)]
		anns := map[string]string{keys[int(k1)%len(keys)]: v1, keys[int(k2)%len(keys)]: v2, k3: v3}
		r, err := NewRevision(as, anns, testDocs)
		if err != nil {
			checkFieldErrors(t, err, sourceAnnotation)
			return
		}
		if p := revisionProblems(as, r); len(p) > 0 {
			t.Errorf("NewRevision(%q) accepted annotations that break %v: %+v", anns, p, r)
		}
	})
}
