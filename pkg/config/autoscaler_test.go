package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/fielderr"
)

func TestDefaultsMatchKeyTable(t *testing.T) {
	data := map[string]string{}
	for _, k := range Keys() {
		data[k.Name] = k.Default
	}
	got, err := NewAutoscalerFromMap(data)
	if err != nil {
		t.Fatalf("the key table's defaults do not parse: %v", err)
	}
	if diff := cmp.Diff(Defaults(), got); diff != "" {
		t.Errorf("key table defaults vs Defaults() (-want +got):\n%s", diff)
	}
	empty, err := NewAutoscalerFromMap(nil)
	if err != nil {
		t.Fatalf("NewAutoscalerFromMap(nil): %v", err)
	}
	if diff := cmp.Diff(Defaults(), empty); diff != "" {
		t.Errorf("NewAutoscalerFromMap(nil) (-want +got):\n%s", diff)
	}
}

func TestKeysDocumented(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Keys() {
		if k.Name == "" || k.Type == "" || k.Default == "" || k.Rule == "" || k.Doc == "" {
			t.Errorf("key %q is not fully documented: %+v", k.Name, k)
		}
		if seen[k.Name] {
			t.Errorf("key %q appears twice in the key table", k.Name)
		}
		seen[k.Name] = true
	}
	if len(seen) != 31 {
		t.Errorf("the key table has %d keys, want 31 (20 Knative keys, tick-interval, scale-to-zero-policy, 4 hpa- keys and 5 parking keys)", len(seen))
	}
}

// errKeys lists the keys named by the FieldErrors inside err.
func errKeys(err error) []string {
	var keys []string
	for _, fe := range fielderr.Errors(err) {
		keys = append(keys, fe.Key)
	}
	return keys
}

func TestNewAutoscalerFromMap(t *testing.T) {
	tests := []struct {
		name     string
		data     map[string]string
		want     func(a *Autoscaler) // applied to Defaults(); nil when an error is expected
		wantErrs []string            // keys named by the errors, in order
	}{
		{name: "unknown keys ignored", data: map[string]string{"panic-window": "6s", "foo": "bar"}, want: func(*Autoscaler) {}},
		{name: "bool true spellings", data: map[string]string{"enable-scale-to-zero": "F", "allow-zero-initial-scale": "1", "initial-scale": "0"},
			want: func(a *Autoscaler) { a.EnableScaleToZero, a.AllowZeroInitialScale, a.InitialScale = false, true, 0 }},
		{name: "bool invalid", data: map[string]string{"enable-scale-to-zero": "yes"}, wantErrs: []string{"enable-scale-to-zero"}},
		{name: "bool not trimmed", data: map[string]string{"enable-scale-to-zero": " true"}, wantErrs: []string{"enable-scale-to-zero"}},

		{name: "target percentage 80", data: map[string]string{"container-concurrency-target-percentage": "80"},
			want: func(a *Autoscaler) { a.ContainerConcurrencyTargetFraction = 0.8 }},
		{name: "target percentage 100", data: map[string]string{"container-concurrency-target-percentage": "100"},
			want: func(a *Autoscaler) { a.ContainerConcurrencyTargetFraction = 1 }},
		{name: "target percentage legacy fraction", data: map[string]string{"container-concurrency-target-percentage": "0.5"},
			want: func(a *Autoscaler) { a.ContainerConcurrencyTargetFraction = 0.5 }},
		{name: "target percentage 1 is a fraction", data: map[string]string{"container-concurrency-target-percentage": "1"},
			want: func(a *Autoscaler) { a.ContainerConcurrencyTargetFraction = 1 }},
		{name: "target percentage above 100", data: map[string]string{"container-concurrency-target-percentage": "100.5"},
			wantErrs: []string{"container-concurrency-target-percentage"}},
		{name: "target percentage 0", data: map[string]string{"container-concurrency-target-percentage": "0"},
			wantErrs: []string{"container-concurrency-target-percentage"}},
		{name: "target percentage negative", data: map[string]string{"container-concurrency-target-percentage": "-5"},
			wantErrs: []string{"container-concurrency-target-percentage"}},
		{name: "target percentage with %", data: map[string]string{"container-concurrency-target-percentage": "70%"},
			wantErrs: []string{"container-concurrency-target-percentage"}},
		{name: "target product at the minimum",
			data: map[string]string{"container-concurrency-target-default": "0.01", "container-concurrency-target-percentage": "1"},
			want: func(a *Autoscaler) {
				a.ContainerConcurrencyTargetDefault, a.ContainerConcurrencyTargetFraction = 0.01, 1
			}},
		{name: "target product too small", data: map[string]string{"container-concurrency-target-default": "0.01"},
			wantErrs: []string{"container-concurrency-target-default"}},
		{name: "target product too small, percentage blamed", data: map[string]string{"container-concurrency-target-percentage": "0.00001"},
			wantErrs: []string{"container-concurrency-target-percentage"}},
		{name: "target default not a number", data: map[string]string{"container-concurrency-target-default": "1e"},
			wantErrs: []string{"container-concurrency-target-default"}},

		{name: "rps default minimum", data: map[string]string{"requests-per-second-target-default": "0.01"}, want: func(a *Autoscaler) { a.RPSTargetDefault = 0.01 }},
		{name: "rps default too small", data: map[string]string{"requests-per-second-target-default": "0.009"},
			wantErrs: []string{"requests-per-second-target-default"}},
		{name: "rps default infinite", data: map[string]string{"requests-per-second-target-default": "+Inf"},
			wantErrs: []string{"requests-per-second-target-default"}},

		{name: "tbc -1", data: map[string]string{"target-burst-capacity": "-1"}, want: func(a *Autoscaler) { a.TargetBurstCapacity = -1 }},
		{name: "tbc 0", data: map[string]string{"target-burst-capacity": "0"}, want: func(a *Autoscaler) { a.TargetBurstCapacity = 0 }},
		{name: "tbc -0.5", data: map[string]string{"target-burst-capacity": "-0.5"}, wantErrs: []string{"target-burst-capacity"}},
		{name: "tbc NaN", data: map[string]string{"target-burst-capacity": "NaN"}, wantErrs: []string{"target-burst-capacity"}},

		{name: "stable window bounds", data: map[string]string{"stable-window": "6s", "tick-interval": "6s"},
			want: func(a *Autoscaler) { a.StableWindow, a.TickInterval = 6*time.Second, 6*time.Second }},
		{name: "stable window 1h", data: map[string]string{"stable-window": "1h"}, want: func(a *Autoscaler) { a.StableWindow = time.Hour }},
		{name: "stable window too short", data: map[string]string{"stable-window": "5s"}, wantErrs: []string{"stable-window"}},
		{name: "stable window too long", data: map[string]string{"stable-window": "1h0m1s"}, wantErrs: []string{"stable-window"}},
		{name: "stable window fractional", data: map[string]string{"stable-window": "6500ms"}, wantErrs: []string{"stable-window"}},
		{name: "stable window without unit", data: map[string]string{"stable-window": "60"}, wantErrs: []string{"stable-window"}},

		{name: "panic window percentage bounds", data: map[string]string{"panic-window-percentage": "1"}, want: func(a *Autoscaler) { a.PanicWindowPercentage = 1 }},
		{name: "panic window percentage 100", data: map[string]string{"panic-window-percentage": "100"}, want: func(a *Autoscaler) { a.PanicWindowPercentage = 100 }},
		{name: "panic window percentage too small", data: map[string]string{"panic-window-percentage": "0.99"}, wantErrs: []string{"panic-window-percentage"}},
		{name: "panic window percentage too big", data: map[string]string{"panic-window-percentage": "101"}, wantErrs: []string{"panic-window-percentage"}},

		{name: "panic threshold not range-checked", data: map[string]string{"panic-threshold-percentage": "10000"},
			want: func(a *Autoscaler) { a.PanicThresholdPercentage = 10000 }},
		{name: "panic threshold below the annotation range", data: map[string]string{"panic-threshold-percentage": "50"},
			want: func(a *Autoscaler) { a.PanicThresholdPercentage = 50 }},
		{name: "panic threshold 0", data: map[string]string{"panic-threshold-percentage": "0"}, wantErrs: []string{"panic-threshold-percentage"}},

		{name: "scale rates just above 1", data: map[string]string{"max-scale-up-rate": "1.001", "max-scale-down-rate": "1.5"},
			want: func(a *Autoscaler) { a.MaxScaleUpRate, a.MaxScaleDownRate = 1.001, 1.5 }},
		{name: "scale rates 1", data: map[string]string{"max-scale-up-rate": "1", "max-scale-down-rate": "1"},
			wantErrs: []string{"max-scale-up-rate", "max-scale-down-rate"}},

		{name: "grace 1ns", data: map[string]string{"scale-to-zero-grace-period": "1ns"}, want: func(a *Autoscaler) { a.ScaleToZeroGracePeriod = 1 }},
		{name: "grace 0", data: map[string]string{"scale-to-zero-grace-period": "0"}, wantErrs: []string{"scale-to-zero-grace-period"}},
		{name: "retention no precision rule", data: map[string]string{"scale-to-zero-pod-retention-period": "1.5s"},
			want: func(a *Autoscaler) { a.ScaleToZeroPodRetentionPeriod = 1500 * time.Millisecond }},
		{name: "retention no upper bound", data: map[string]string{"scale-to-zero-pod-retention-period": "48h"},
			want: func(a *Autoscaler) { a.ScaleToZeroPodRetentionPeriod = 48 * time.Hour }},
		{name: "retention negative", data: map[string]string{"scale-to-zero-pod-retention-period": "-1s"}, wantErrs: []string{"scale-to-zero-pod-retention-period"}},
		{name: "scale down delay no upper bound", data: map[string]string{"scale-down-delay": "2h"}, want: func(a *Autoscaler) { a.ScaleDownDelay = 2 * time.Hour }},
		{name: "scale down delay negative", data: map[string]string{"scale-down-delay": "-2s"}, wantErrs: []string{"scale-down-delay"}},
		{name: "scale down delay fractional", data: map[string]string{"scale-down-delay": "1.5s"}, wantErrs: []string{"scale-down-delay"}},

		{name: "activator capacity 1", data: map[string]string{"activator-capacity": "1"}, want: func(a *Autoscaler) { a.ActivatorCapacity = 1 }},
		{name: "activator capacity too small", data: map[string]string{"activator-capacity": "0.9"}, wantErrs: []string{"activator-capacity"}},

		{name: "class trimmed", data: map[string]string{"pod-autoscaler-class": "  hpa.autoscaling.knative.dev\n"},
			want: func(a *Autoscaler) { a.PodAutoscalerClass = ClassHPA }},
		{name: "class of another domain", data: map[string]string{"pod-autoscaler-class": "custom.example.com"},
			want: func(a *Autoscaler) { a.PodAutoscalerClass = "custom.example.com" }},
		{name: "class typo in knative.dev", data: map[string]string{"pod-autoscaler-class": "kpa.autoscaler.knative.dev"},
			wantErrs: []string{"pod-autoscaler-class"}},
		{name: "class empty", data: map[string]string{"pod-autoscaler-class": " "}, wantErrs: []string{"pod-autoscaler-class"}},

		{name: "initial scale 0 not allowed", data: map[string]string{"initial-scale": "0"}, wantErrs: []string{"initial-scale"}},
		{name: "initial scale negative", data: map[string]string{"initial-scale": "-1", "allow-zero-initial-scale": "true"}, wantErrs: []string{"initial-scale"}},
		{name: "initial scale decimal", data: map[string]string{"initial-scale": "1.0"}, wantErrs: []string{"initial-scale"}},
		{name: "initial scale beyond int32", data: map[string]string{"initial-scale": "2147483648"}, wantErrs: []string{"initial-scale"}},
		{name: "initial scale 0, allow-zero invalid: one error", data: map[string]string{"initial-scale": "0", "allow-zero-initial-scale": "y"},
			wantErrs: []string{"allow-zero-initial-scale"}},

		{name: "min and max", data: map[string]string{"min-scale": "2", "max-scale": "2"}, want: func(a *Autoscaler) { a.MinScale, a.MaxScale = 2, 2 }},
		{name: "min above unlimited max", data: map[string]string{"min-scale": "5"}, want: func(a *Autoscaler) { a.MinScale = 5 }},
		{name: "min above max", data: map[string]string{"min-scale": "3", "max-scale": "2"}, wantErrs: []string{"min-scale"}},
		{name: "max negative", data: map[string]string{"max-scale": "-1"}, wantErrs: []string{"max-scale"}},
		{name: "min negative", data: map[string]string{"min-scale": "-1"}, wantErrs: []string{"min-scale"}},
		{name: "max within limit", data: map[string]string{"max-scale": "10", "max-scale-limit": "10"},
			want: func(a *Autoscaler) { a.MaxScale, a.MaxScaleLimit = 10, 10 }},
		{name: "max above limit", data: map[string]string{"max-scale": "11", "max-scale-limit": "10"}, wantErrs: []string{"max-scale"}},
		{name: "limit needs a max", data: map[string]string{"max-scale-limit": "10"}, wantErrs: []string{"max-scale"}},
		{name: "limit negative", data: map[string]string{"max-scale-limit": "-1"}, wantErrs: []string{"max-scale-limit"}},
		{name: "max above limit and below min: one error", data: map[string]string{"max-scale": "11", "max-scale-limit": "10", "min-scale": "12"},
			wantErrs: []string{"max-scale"}},

		{name: "tick interval", data: map[string]string{"tick-interval": "1s"}, want: func(a *Autoscaler) { a.TickInterval = time.Second }},
		{name: "learned scale-to-zero policy", data: map[string]string{"scale-to-zero-policy": "learned"},
			want: func(a *Autoscaler) { a.ScaleToZeroPolicy = ScaleToZeroLearned }},
		{name: "unknown scale-to-zero policy", data: map[string]string{"scale-to-zero-policy": "hybrid"}, wantErrs: []string{"scale-to-zero-policy"}},
		{name: "tick interval too short", data: map[string]string{"tick-interval": "500ms"}, wantErrs: []string{"tick-interval"}},
		{name: "tick interval fractional", data: map[string]string{"tick-interval": "2.5s"}, wantErrs: []string{"tick-interval"}},
		{name: "tick interval above the stable window", data: map[string]string{"tick-interval": "61s"}, wantErrs: []string{"tick-interval"}},
		{name: "tick interval vs invalid window: one error", data: map[string]string{"tick-interval": "61s", "stable-window": "2h"},
			wantErrs: []string{"stable-window"}},

		{name: "hpa keys", data: map[string]string{"hpa-cpu-initialization-period": "2m", "hpa-initial-readiness-delay": "0s",
			"hpa-downscale-stabilization": "10s", "hpa-tolerance": "0"},
			want: func(a *Autoscaler) {
				a.HPACPUInitializationPeriod, a.HPAInitialReadinessDelay, a.HPADownscaleStabilization, a.HPATolerance = 2*time.Minute, 0, 10*time.Second, 0
			}},
		{name: "hpa keys out of range, all at once", data: map[string]string{"hpa-cpu-initialization-period": "-1s", "hpa-initial-readiness-delay": "x",
			"hpa-downscale-stabilization": "2h", "hpa-tolerance": "1"},
			wantErrs: []string{"hpa-cpu-initialization-period", "hpa-initial-readiness-delay", "hpa-downscale-stabilization", "hpa-tolerance"}},
		{name: "hpa downscale stabilization fractional", data: map[string]string{"hpa-downscale-stabilization": "1.5s"},
			wantErrs: []string{"hpa-downscale-stabilization"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewAutoscalerFromMap(tt.data)
			if diff := cmp.Diff(tt.wantErrs, errKeys(err)); diff != "" {
				t.Fatalf("error keys (-want +got):\n%s\nerror: %v", diff, err)
			}
			if tt.want == nil {
				return
			}
			want := Defaults()
			tt.want(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("NewAutoscalerFromMap (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewAutoscalerFromMapAllProblemsAtOnce(t *testing.T) {
	data := map[string]string{
		"stable-window":              "3s",
		"enable-scale-to-zero":       "maybe",
		"max-scale-down-rate":        "1",
		"scale-to-zero-grace-period": "0s",
		"initial-scale":              "0",
		"min-scale":                  "4",
		"max-scale":                  "3",
	}
	_, err := NewAutoscalerFromMap(data)
	want := []string{
		`config-autoscaler "enable-scale-to-zero" = "maybe": must be true or false; write "true" or "false"`,
		`config-autoscaler "stable-window" = "3s": must be within [6s, 1h]; set it to a whole number of seconds between 6s and 1h`,
		`config-autoscaler "max-scale-down-rate" = "1": must be above 1; set it above 1, e.g. 2`,
		`config-autoscaler "scale-to-zero-grace-period" = "0s": must be above 0; set a positive duration such as "30s"`,
		`config-autoscaler "initial-scale" = "0": must be at least 1 unless allow-zero-initial-scale is true; set it to 1 or more, or set ` +
			`allow-zero-initial-scale: "true"`,
		`config-autoscaler "min-scale" = "4": min-scale 4 must be at most max-scale 3; lower min-scale to 3 or less, or raise max-scale to 4 or more (0 = unlimited)`,
	}
	var got []string
	for _, fe := range fielderr.Errors(err) {
		got = append(got, fe.Error())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if err.Error() != strings.Join(want, "\n") {
		t.Errorf("err.Error() = %q, want the errors one per line", err.Error())
	}
	var fe *fielderr.Error
	if !errors.As(err, &fe) || fe.Source != sourceConfigMap {
		t.Errorf("errors.As(err, *fielderr.Error) = %v, %+v; want a config-autoscaler FieldError", fe != nil, fe)
	}
}

func TestFieldErrorDefaulted(t *testing.T) {
	_, err := NewAutoscalerFromMap(map[string]string{"max-scale-limit": "5"})
	want := `config-autoscaler "max-scale" = "0" (default): must be within [1, 5] because max-scale-limit is 5 (0 = unlimited is not allowed then); set ` +
		`max-scale between 1 and 5, or raise max-scale-limit (0 removes the limit)`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
}

func TestParseMessages(t *testing.T) {
	tests := []struct {
		name, key, value, want string
	}{
		{name: "spaces", key: KeyMaxScale, value: " 3 ",
			want: `config-autoscaler "max-scale" = " 3 ": must be a whole number; remove the spaces around the value: write "3"`},
		{name: "missing unit", key: KeyScaleDownDelay, value: "30",
			want: `config-autoscaler "scale-down-delay" = "30": must be a duration with a unit; add a unit, e.g. "30s" for 30 seconds`},
		{name: "bad duration", key: KeyStableWindow, value: "one minute",
			want: `config-autoscaler "stable-window" = "one minute": must be a duration; write a number with a unit such as "60s" or "1m30s" (units: ms, s, m, h)`},
		{name: "rounding hint", key: KeyStableWindow, value: "6.4s",
			want: `config-autoscaler "stable-window" = "6.4s": must be a whole number of seconds; round it to "6s"`},
		{name: "not a number", key: KeyTargetBurstCapacity, value: "lots",
			want: `config-autoscaler "target-burst-capacity" = "lots": must be a number; write a plain number such as "211": no unit, no "%", no quotes inside`},
		{name: "int32 overflow", key: KeyMaxScaleLimit, value: "99999999999",
			want: `config-autoscaler "max-scale-limit" = "99999999999": must be a whole number in [-2147483648, 2147483647]; use a smaller number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewAutoscalerFromMap(map[string]string{tt.key: tt.value})
			if err == nil || err.Error() != tt.want {
				t.Errorf("error = %v\nwant    %s", err, tt.want)
			}
		})
	}
}
