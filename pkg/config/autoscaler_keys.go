package config

import (
	"fmt"
	"strings"
	"time"
)

// configKeys is the key table of config-autoscaler: name, default, parser,
// rule and documentation of every key. Knative's rules, except where a
// comment says otherwise.
var configKeys = append(coreConfigKeys, parkingKeys()...)

// coreConfigKeys are the key table's rows but parking's (parking.go).
var coreConfigKeys = []configKey{
	boolKey(KeyDoc{
		Name: KeyEnableScaleToZero, Default: "true", Rule: "true or false",
		Doc: "Whether revisions may scale to zero pods when idle. When false a revision keeps at least one pod.",
	}, func(a *Autoscaler) *bool { return &a.EnableScaleToZero }),
	{
		KeyDoc: KeyDoc{
			Name: KeyContainerConcurrencyTargetPercentage, Type: "float", Default: "70",
			Rule: "in (0, 100]; a value above 1 is a percentage, a value of at most 1 is read as a fraction (legacy: 0.7 means 70%, 1 means 100%)",
			Doc: "The share of a pod's concurrency capacity the autoscaler aims to use, leaving the rest as headroom " +
				"for bursts. 70 means the target is 70% of containerConcurrency (or of container-concurrency-target-default).",
			Override: AnnotationTargetUtilizationPercentage,
		},
		parse: parseTargetPercentage,
		check: func(a *Autoscaler) *violation {
			if f := a.ContainerConcurrencyTargetFraction; f <= 0 || f > 1 {
				return broken("must be within (0, 100]", "set a percentage such as 70 (above 1 and at most 100)")
			}
			return nil
		},
	},
	floatKey(KeyDoc{
		Name: KeyContainerConcurrencyTargetDefault, Default: "100",
		Rule:     "multiplied by the target fraction (0.7 by default), at least 0.01",
		Doc:      "The per-pod concurrency capacity assumed for revisions with containerConcurrency 0 (unlimited).",
		Override: AnnotationTarget,
	}, func(a *Autoscaler) *float64 { return &a.ContainerConcurrencyTargetDefault }, nil),
	floatKey(KeyDoc{
		Name: KeyRequestsPerSecondTargetDefault, Default: "200", Rule: "at least 0.01",
		Doc:      "The per-pod requests-per-second capacity of revisions that use the rps metric; the target is 70% of it.",
		Override: AnnotationTarget,
	}, func(a *Autoscaler) *float64 { return &a.RPSTargetDefault }, func(f float64) *violation {
		return atLeast(f, targetMin, "set it to 0.01 or more, e.g. 200")
	}),
	floatKey(KeyDoc{
		Name: KeyTargetBurstCapacity, Default: "211", Rule: "at least 0, or exactly -1",
		Doc: "How much spare concurrency the revision must keep beyond its load before the activator leaves the " +
			"request path. 0: the activator is in the path only at zero pods; -1: always in the path.",
		Override: AnnotationTargetBurstCapacity,
	}, func(a *Autoscaler) *float64 { return &a.TargetBurstCapacity }, checkTBC),
	durationKey(KeyDoc{
		Name: KeyStableWindow, Default: "60s", Rule: "within [6s, 1h], whole seconds",
		Doc: "The window over which load is averaged in stable mode; scale-to-zero also waits for one window " +
			"without traffic.",
		Override: AnnotationWindow,
	}, func(a *Autoscaler) *time.Duration { return &a.StableWindow }, checkWindow),
	floatKey(KeyDoc{
		Name: KeyPanicWindowPercentage, Default: "10", Rule: "within [1, 100]",
		Doc:      "The panic window as a percentage of the stable window (10 gives 6s with a 60s stable window).",
		Override: AnnotationPanicWindowPercentage,
	}, func(a *Autoscaler) *float64 { return &a.PanicWindowPercentage }, checkPanicWindowPercentage),
	floatKey(KeyDoc{
		Name: KeyPanicThresholdPercentage, Default: "200",
		Rule: "above 0 (Knative does not range-check this key; the annotation must be within [110, 1000])",
		Doc: "The panic-window load, as a percentage of what the ready pods can take at target, that starts " +
			"panic mode (scale up fast, never down).",
		Override: AnnotationPanicThresholdPercentage,
	}, func(a *Autoscaler) *float64 { return &a.PanicThresholdPercentage }, func(f float64) *violation {
		// Knative accepts any number here. Ebb keeps that quirk but rejects
		// values <= 0: with them every tick would be a panic tick and the
		// revision could never scale down.
		if f <= 0 {
			return broken("must be above 0", "set a percentage such as 200 (the annotation accepts 110 to 1000)")
		}
		return nil
	}),
	floatKey(KeyDoc{
		Name: KeyMaxScaleUpRate, Default: "1000", Rule: "above 1",
		Doc: "The most the pod count may grow in one decision: at most ceil(rate × ready pods).",
	}, func(a *Autoscaler) *float64 { return &a.MaxScaleUpRate }, func(f float64) *violation {
		return above(f, 1, "set it above 1, e.g. 1000")
	}),
	floatKey(KeyDoc{
		Name: KeyMaxScaleDownRate, Default: "2", Rule: "above 1",
		Doc: "The most the pod count may shrink in one decision: at least floor(ready pods / rate), " +
			"never more than the scale last decided (a limit on shrinking never grows the count).",
	}, func(a *Autoscaler) *float64 { return &a.MaxScaleDownRate }, func(f float64) *violation {
		return above(f, 1, "set it above 1, e.g. 2")
	}),
	durationKey(KeyDoc{
		Name: KeyScaleToZeroGracePeriod, Default: "30s", Rule: "above 0",
		Doc: "How long the last pod is kept after the decision to scale to zero, so that the activator is in " +
			"the request path before it goes.",
	}, func(a *Autoscaler) *time.Duration { return &a.ScaleToZeroGracePeriod }, func(d time.Duration) *violation {
		if d <= 0 {
			return broken("must be above 0", `set a positive duration such as "30s"`)
		}
		return nil
	}),
	durationKey(KeyDoc{
		Name: KeyScaleToZeroPodRetentionPeriod, Default: "0s", Rule: "at least 0",
		Doc: "The minimum time the last pod stays once the autoscaler decides to scale to zero; the longer of " +
			"this and scale-to-zero-grace-period applies.",
		Override: AnnotationScaleToZeroPodRetention,
	}, func(a *Autoscaler) *time.Duration { return &a.ScaleToZeroPodRetentionPeriod }, func(d time.Duration) *violation {
		if d < 0 {
			return broken("must be at least 0", `set a duration such as "0s" or "5m"`)
		}
		return nil
	}),
	durationKey(KeyDoc{
		Name: KeyScaleDownDelay, Default: "0s", Rule: "at least 0, whole seconds",
		Doc: "How long load must stay lower before the pod count goes down: the decision is the highest " +
			"recommendation of that period. 0 scales down at once.",
		Override: AnnotationScaleDownDelay,
	}, func(a *Autoscaler) *time.Duration { return &a.ScaleDownDelay }, func(d time.Duration) *violation {
		if d < 0 {
			return broken("must be at least 0", `set a duration such as "0s" or "15m"`)
		}
		return wholeSeconds(d, 0)
	}),
	floatKey(KeyDoc{
		Name: KeyActivatorCapacity, Default: "100", Rule: "at least 1",
		Doc: "The concurrency one activator takes; decides how many activators serve a revision.",
	}, func(a *Autoscaler) *float64 { return &a.ActivatorCapacity }, func(f float64) *violation {
		return atLeast(f, 1, "set it to 1 or more, e.g. 100")
	}),
	{
		KeyDoc: KeyDoc{
			Name: KeyPodAutoscalerClass, Type: "string", Default: ClassKPA,
			Rule:     "not empty; a value ending in .knative.dev must be " + ClassKPA + " or " + ClassHPA + " (Ebb checks this; Knative does not)",
			Doc:      "The autoscaler class of revisions without a class annotation. Surrounding spaces are trimmed.",
			Override: AnnotationClass,
		},
		parse: func(a *Autoscaler, raw string) *violation {
			a.PodAutoscalerClass = strings.TrimSpace(raw)
			return nil
		},
		check: func(a *Autoscaler) *violation { return checkClass(a.PodAutoscalerClass) },
	},
	int32Key(KeyDoc{
		Name: KeyInitialScale, Default: "1",
		Rule:     "at least 1, or 0 when allow-zero-initial-scale is true",
		Doc:      "The pod count a new revision starts with, before it has seen any traffic.",
		Override: AnnotationInitialScale,
	}, func(a *Autoscaler) *int32 { return &a.InitialScale }, func(i int32) *violation {
		return nonNegative(i, "set it to 1 or more (0 needs allow-zero-initial-scale: \"true\")")
	}),
	boolKey(KeyDoc{
		Name: KeyAllowZeroInitialScale, Default: "false", Rule: "true or false",
		Doc: "Whether initial-scale (and the initial-scale annotation) may be 0: a new revision then starts with no pod.",
	}, func(a *Autoscaler) *bool { return &a.AllowZeroInitialScale }),
	int32Key(KeyDoc{
		Name: KeyMinScale, Default: "0", Rule: "at least 0; at most max-scale when max-scale is above 0",
		Doc:      "The smallest pod count of a reachable revision.",
		Override: AnnotationMinScale,
	}, func(a *Autoscaler) *int32 { return &a.MinScale }, func(i int32) *violation {
		return nonNegative(i, "set it to 0 (no minimum) or more")
	}),
	int32Key(KeyDoc{
		Name: KeyMaxScale, Default: "0",
		Rule:     "at least 0 (0 = unlimited); within [1, max-scale-limit] when max-scale-limit is above 0",
		Doc:      "The largest pod count of a revision; 0 means unlimited.",
		Override: AnnotationMaxScale,
	}, func(a *Autoscaler) *int32 { return &a.MaxScale }, func(i int32) *violation {
		return nonNegative(i, "set it to 0 (unlimited) or more")
	}),
	int32Key(KeyDoc{
		Name: KeyMaxScaleLimit, Default: "0", Rule: "at least 0 (0 = no limit)",
		Doc: "The largest max-scale any revision may ask for; when above 0, every revision must have a max-scale.",
	}, func(a *Autoscaler) *int32 { return &a.MaxScaleLimit }, func(i int32) *violation {
		return nonNegative(i, "set it to 0 (no limit) or more")
	}),
	durationKey(KeyDoc{
		Name: KeyTickInterval, Default: "2s", Rule: "at least 1s, whole seconds, at most stable-window",
		Doc: "Ebb only: how often the decider runs. Knative's ticker is fixed at 2s and Knative ignores this " +
			"key; keep 2s for Knative's behaviour.",
	}, func(a *Autoscaler) *time.Duration { return &a.TickInterval }, func(d time.Duration) *violation {
		if d < time.Second {
			return broken("must be at least 1s", `set it to a whole number of seconds such as "2s"`)
		}
		return wholeSeconds(d, time.Second)
	}),
	{
		KeyDoc: KeyDoc{
			Name: KeyScaleToZeroPolicy, Type: "string", Default: ScaleToZeroKnative, Rule: "knative or learned",
			Doc: "Ebb only: when the last pod goes and comes back. knative: a stable window (and the grace or retention period) after " +
				"the traffic stops. learned: from the revision's own idle gaps, keep the pod through gaps it expects to end soon, release it " +
				"otherwise and start it again ahead of the next expected request; Knative's behaviour until it has seen enough gaps.",
			Override: AnnotationScaleToZeroPolicy,
		},
		parse: func(a *Autoscaler, raw string) *violation {
			a.ScaleToZeroPolicy = raw
			return nil
		},
		check: func(a *Autoscaler) *violation { return checkScaleToZeroPolicy(nil, a.ScaleToZeroPolicy) },
	},
	durationKey(KeyDoc{
		Name: KeyHPACPUInitializationPeriod, Default: "5m", Rule: "at least 0",
		Doc: "Ebb only, the HPA class (Kubernetes' --horizontal-pod-autoscaler-cpu-initialization-period): " +
			"for this long after a pod starts, its cpu sample counts only once the pod is Ready and the sample " +
			"covers a whole window since then.",
	}, func(a *Autoscaler) *time.Duration { return &a.HPACPUInitializationPeriod }, nonNegativeDuration(`"5m"`)),
	durationKey(KeyDoc{
		Name: KeyHPAInitialReadinessDelay, Default: "30s", Rule: "at least 0",
		Doc: "Ebb only, the HPA class (Kubernetes' --horizontal-pod-autoscaler-initial-readiness-delay): " +
			"after the initialization period, a pod that is not Ready counts as unready for cpu only if its " +
			"Ready condition last changed within this delay of its start (it never became ready).",
	}, func(a *Autoscaler) *time.Duration { return &a.HPAInitialReadinessDelay }, nonNegativeDuration(`"30s"`)),
	durationKey(KeyDoc{
		Name: KeyHPADownscaleStabilization, Default: "5m", Rule: "within [0, 1h], whole seconds",
		Doc: "Ebb only, the HPA class (Kubernetes' --horizontal-pod-autoscaler-downscale-stabilization): the " +
			"scale-down stabilization window of revisions without an autoscaling.ebb.dev/behavior annotation.",
	}, func(a *Autoscaler) *time.Duration { return &a.HPADownscaleStabilization }, func(d time.Duration) *violation {
		if d < 0 || d > time.Hour {
			return broken("must be within [0, 1h]", `set a duration such as "5m"`)
		}
		return wholeSeconds(d, 0)
	}),
	floatKey(KeyDoc{
		Name: KeyHPATolerance, Default: "0.1", Rule: "within [0, 1)",
		Doc: "Ebb only, the HPA class (Kubernetes' --horizontal-pod-autoscaler-tolerance): the band around a " +
			"usage ratio of 1 inside which a metric keeps the current count; a behavior's tolerance overrides it.",
	}, func(a *Autoscaler) *float64 { return &a.HPATolerance }, func(f float64) *violation {
		if f < 0 || f >= 1 {
			return broken("must be within [0, 1)", "set a fraction such as 0.1 (10%)")
		}
		return nil
	}),
}

// nonNegativeDuration is the rule of a duration that may be 0 (off).
func nonNegativeDuration(example string) func(time.Duration) *violation {
	return func(d time.Duration) *violation {
		if d < 0 {
			return broken("must be at least 0", "set a duration such as "+example+", or \"0s\" for none")
		}
		return nil
	}
}

// crossRules are the rules that involve two keys.
var crossRules = []crossRule{
	{needs: []string{KeyContainerConcurrencyTargetPercentage, KeyContainerConcurrencyTargetDefault},
		check: func(a *Autoscaler, data map[string]string) (string, *violation) {
			t := a.ContainerConcurrencyTargetFraction * a.ContainerConcurrencyTargetDefault
			if t >= targetMin {
				return "", nil
			}
			return present(data, KeyContainerConcurrencyTargetDefault, KeyContainerConcurrencyTargetPercentage),
				broken(fmt.Sprintf("the per-pod target %s × %s (default × target fraction) = %s must be at least 0.01",
					formatFloat(a.ContainerConcurrencyTargetDefault), formatFloat(a.ContainerConcurrencyTargetFraction), formatFloat(t)),
					"raise "+KeyContainerConcurrencyTargetDefault+" or "+KeyContainerConcurrencyTargetPercentage)
		}},
	{needs: []string{KeyInitialScale, KeyAllowZeroInitialScale},
		check: func(a *Autoscaler, _ map[string]string) (string, *violation) {
			if a.InitialScale != 0 || a.AllowZeroInitialScale {
				return "", nil
			}
			return KeyInitialScale, broken("must be at least 1 unless allow-zero-initial-scale is true",
				`set it to 1 or more, or set allow-zero-initial-scale: "true"`)
		}},
	{needs: []string{KeyMaxScale, KeyMaxScaleLimit},
		check: func(a *Autoscaler, _ map[string]string) (string, *violation) {
			if a.MaxScaleLimit <= 0 || (a.MaxScale >= 1 && a.MaxScale <= a.MaxScaleLimit) {
				return "", nil
			}
			return KeyMaxScale, broken(fmt.Sprintf("must be within [1, %d] because max-scale-limit is %d (0 = unlimited is not allowed then)", a.MaxScaleLimit,
				a.MaxScaleLimit),
				fmt.Sprintf("set max-scale between 1 and %d, or raise max-scale-limit (0 removes the limit)", a.MaxScaleLimit))
		}},
	{needs: []string{KeyMinScale, KeyMaxScale},
		check: func(a *Autoscaler, data map[string]string) (string, *violation) {
			if a.MaxScale == 0 || a.MinScale <= a.MaxScale {
				return "", nil
			}
			return present(data, KeyMinScale, KeyMaxScale), broken(fmt.Sprintf("min-scale %d must be at most max-scale %d", a.MinScale, a.MaxScale),
				fmt.Sprintf("lower min-scale to %d or less, or raise max-scale to %d or more (0 = unlimited)", a.MaxScale, a.MinScale))
		}},
	{needs: []string{KeyTickInterval, KeyStableWindow},
		check: func(a *Autoscaler, _ map[string]string) (string, *violation) {
			if a.TickInterval <= a.StableWindow {
				return "", nil
			}
			return KeyTickInterval, broken("must be at most stable-window ("+formatDuration(a.StableWindow)+")",
				`lower tick-interval ("2s" is Knative's) or raise stable-window`)
		}},
}

// parseTargetPercentage converts container-concurrency-target-percentage to
// a fraction as Knative does: above 1 it is a percentage, otherwise already
// a fraction.
func parseTargetPercentage(a *Autoscaler, raw string) *violation {
	f, v := parseFloat(raw, "70")
	if v != nil {
		return v
	}
	if f > 1 {
		f /= 100
	}
	a.ContainerConcurrencyTargetFraction = f
	return nil
}
