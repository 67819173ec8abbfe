package decider

import (
	"strconv"
	"time"
)

// Code is a machine-readable reason for (part of) a decision.
type Code string

// Reasons of the recommendation (the KPA decider).
const (
	// NoData: no sample in the stable window; the recommendation, EBC and
	// panic state are kept.
	NoData Code = "NoData"
	// MetricRefused: seconds whose metric was not a number in [0,
	// MaxMetricValue] were left out since the last decision (seconds,
	// the bound).
	MetricRefused Code = "MetricRefused"
	// StableTarget: the stable average over the per-pod target (average,
	// target, pods).
	StableTarget Code = "StableTarget"
	// PanicTarget: in panic, the panic average over the target (average,
	// target, pods).
	PanicTarget Code = "PanicTarget"
	// ScaleUpRateLimited: max-scale-up-rate capped the count (wanted,
	// allowed, ready).
	ScaleUpRateLimited Code = "ScaleUpRateLimited"
	// ScaleDownRateLimited: max-scale-down-rate held the count up (wanted,
	// allowed, ready).
	ScaleDownRateLimited Code = "ScaleDownRateLimited"
	// ActivationScale: raised to activation-scale (wanted, activation scale).
	ActivationScale Code = "ActivationScale"
	// PanicEntered: the panic average needs panic-threshold times the ready
	// pods (pods for the panic average, ready, threshold).
	PanicEntered Code = "PanicEntered"
	// PanicExited: no over-threshold decision for more than a stable window
	// (stable window seconds).
	PanicExited Code = "PanicExited"
	// PanicHold: in panic the count never goes down (wanted, held).
	PanicHold Code = "PanicHold"
	// ScaleDownDelayed: scale-down-delay kept a higher recent count (wanted,
	// held, delay seconds).
	ScaleDownDelayed Code = "ScaleDownDelayed"
)

// Reasons of the scale target (what Knative's KPA reconciler decides).
const (
	// NoMetricsYet: no decision with data yet; the scale is left as it is.
	NoMetricsYet Code = "NoMetricsYet"
	// MinScale: raised to min-scale (wanted, min-scale).
	MinScale Code = "MinScale"
	// InitialScale: raised to initial-scale until it is first reached
	// (wanted, initial scale).
	InitialScale Code = "InitialScale"
	// MaxScale: capped at max-scale (wanted, max-scale).
	MaxScale Code = "MaxScale"
	// ScaleToZeroDisabled: enable-scale-to-zero is false; kept at 1.
	ScaleToZeroDisabled Code = "ScaleToZeroDisabled"
	// AwaitingActivation: activating without a usable recommendation; the
	// scale is left alone until the activation timeout (seconds left).
	AwaitingActivation Code = "AwaitingActivation"
	// ActivationTimeout: activating for longer than progress-deadline + 30s;
	// scaled to zero (timeout seconds).
	ActivationTimeout Code = "ActivationTimeout"
	// StableWindowHold: active for less than a stable window; held at one
	// pod (seconds left).
	StableWindowHold Code = "StableWindowHold"
	// Deactivated: active for a stable window and the recommendation is 0;
	// the revision becomes inactive (stable window seconds).
	Deactivated Code = "Deactivated"
	// PodRetention: scale-to-zero-pod-retention-period keeps the last pod
	// (seconds left).
	PodRetention Code = "PodRetention"
	// GracePeriod: the activator has not been in the path for the
	// scale-to-zero grace period yet (seconds in path, grace seconds).
	GracePeriod Code = "GracePeriod"
	// ScaledToZero: every scale-to-zero condition holds (inactive seconds,
	// activator seconds in path).
	ScaledToZero Code = "ScaledToZero"
)

// Reasons of the learned scale-to-zero policy (learned/policy.go).
const (
	// LearnedFallback: too few idle gaps seen yet; Knative's scale-to-zero
	// rules apply (gaps seen, gaps needed).
	LearnedFallback Code = "LearnedFallback"
	// PreWarm: a replica is started ahead of a request the idle-gap history
	// expects (seconds until the expected range of idle time starts,
	// gaps that ended in it, gaps that lasted that long).
	PreWarm Code = "PreWarm"
	// KeepAlive: the replica is kept through a range of idle time where the
	// history expects a request (the numbers as PreWarm).
	KeepAlive Code = "KeepAlive"
	// LearnedRelease: no request is expected soon enough to pay for a
	// replica; released until the next range worth one (seconds until
	// it, -1 for none; gaps that lasted this long; all gaps).
	LearnedRelease Code = "LearnedRelease"
)

// Reasons of routing and state.
const (
	// ActivatorNoReadyPods: no ready pod, so requests go through the activator.
	ActivatorNoReadyPods Code = "ActivatorNoReadyPods"
	// ActivatorScaleUnknown: the scale is unknown or zero, so requests go
	// through the activator (want).
	ActivatorScaleUnknown Code = "ActivatorScaleUnknown"
	// ActivatorBurstCapacity: the excess burst capacity is negative (EBC,
	// target-burst-capacity).
	ActivatorBurstCapacity Code = "ActivatorBurstCapacity"
	// ActivatorOutOfPath: enough spare capacity; requests go to the pods
	// directly (EBC).
	ActivatorOutOfPath Code = "ActivatorOutOfPath"
	// StateChanged: the revision became activating, active or inactive
	// (the new State).
	StateChanged Code = "StateChanged"
)

// Reason is one machine-readable reason with the numbers it speaks of. Each
// Code has one constructor (reasons.go) whose parameters name them.
type Reason struct {
	Code Code
	// values are the numbers the Code speaks of, in the order of its
	// constructor's parameters (reasons.go: one constructor per Code).
	values [3]float64
	// Detail qualifies StateChanged ("NoTraffic", "TimedOut", "Queued"),
	// the policy reasons (the selectPolicy), the HPA class's metric
	// reasons (the metric) and the learned policy's reasons
	// (DetailRestored, DetailSequence).
	Detail string
}

// Values are the reason's numbers in its constructor's order: what a store
// keeps of it (RestoredReason rebuilds it).
func (r Reason) Values() [3]float64 { return r.values }

// Equal reports whether r and o are the same reason (code, detail and
// numbers): go-cmp compares reasons by it, their numbers being unexported.
func (r Reason) Equal(o Reason) bool { return r == o }

// RestoredReason is a reason as a store kept it: its code, its detail and
// its Values.
func RestoredReason(code Code, detail string, values [3]float64) Reason {
	return Reason{Code: code, Detail: detail, values: values}
}

// num formats a number of a sentence; -0 (0 times a negative, or a sum
// of opposite tiny terms) prints as 0.
func num(f float64) string {
	if f == 0 {
		f = 0 // -0 == 0: this drops the sign
	}
	return strconv.FormatFloat(f, 'g', 10, 64)
}

func secs(f float64) string { return (time.Duration(f * float64(time.Second))).String() }

// Message is the reason as a sentence for people.
func (r Reason) Message() string {
	if m, ok := recommendationMessage(r); ok {
		return m
	}
	if m, ok := targetMessage(r); ok {
		return m
	}
	if m, ok := behaviorMessage(r); ok {
		return m
	}
	if m, ok := metricMessage(r); ok {
		return m
	}
	if m, ok := learnedMessage(r); ok {
		return m
	}
	if m, ok := parkMessage(r); ok {
		return m
	}
	return string(r.Code)
}

func recommendationMessage(r Reason) (string, bool) {
	switch r.Code {
	case NoData:
		return "no metric recorded in the last stable window; recommendation, burst capacity and panic state are kept", true
	case MetricRefused:
		seconds, bound := r.values[0], r.values[1]
		return num(seconds) + " second(s) of metrics left out: a value was not a number in [0, " + num(bound) + "]", true
	case StableTarget:
		average, target, pods := r.values[0], r.values[1], r.values[2]
		return "stable average " + num(average) + " over a per-pod target of " + num(target) + " needs " + num(pods) + " pods", true
	case PanicTarget:
		average, target, pods := r.values[0], r.values[1], r.values[2]
		return "panic average " + num(average) + " over a per-pod target of " + num(target) + " needs " + num(pods) + " pods", true
	case ScaleUpRateLimited:
		wanted, allowed, ready := r.values[0], r.values[1], r.values[2]
		return "max-scale-up-rate allows at most " + num(allowed) + " pods from " + num(ready) + " ready; wanted " + num(wanted), true
	case ScaleDownRateLimited:
		wanted, allowed, ready := r.values[0], r.values[1], r.values[2]
		return "max-scale-down-rate allows no fewer than " + num(allowed) + " pods from " + num(ready) + " ready; wanted " + num(wanted), true
	case ActivationScale:
		wanted, activationScale := r.values[0], r.values[1]
		return "raised from " + num(wanted) + " to activation-scale " + num(activationScale) + " on the way up from zero", true
	case PanicEntered:
		panicPods, ready, threshold := r.values[0], r.values[1], r.values[2]
		return "panic mode: the panic window needs " + num(panicPods) + " pods, at least " + num(threshold*100) + "% of " + num(max(ready, 1)) + " ready", true
	case PanicExited:
		stableWindowSeconds := r.values[0]
		return "left panic mode: no burst over the threshold for more than the stable window (" + secs(stableWindowSeconds) + ")", true
	case PanicHold:
		wanted, held := r.values[0], r.values[1]
		return "in panic mode the count never goes down: held at " + num(held) + " (wanted " + num(wanted) + ")", true
	case ScaleDownDelayed:
		wanted, held, delaySeconds := r.values[0], r.values[1], r.values[2]
		return "scale-down-delay " + secs(delaySeconds) + " holds the highest recent count " + num(held) + " (wanted " + num(wanted) + ")", true
	}
	return "", false
}

func targetMessage(r Reason) (string, bool) {
	switch r.Code {
	case NoMetricsYet:
		return "no decision with data yet: the scale is left as it is", true
	case MinScale:
		wanted, minScale := r.values[0], r.values[1]
		return "raised from " + num(wanted) + " to min-scale " + num(minScale), true
	case InitialScale:
		wanted, initialScale := r.values[0], r.values[1]
		return "raised from " + num(wanted) + " to initial-scale " + num(initialScale) + " until it is first reached", true
	case MaxScale:
		wanted, maxScale := r.values[0], r.values[1]
		return "capped from " + num(wanted) + " at max-scale " + num(maxScale), true
	case ScaleToZeroDisabled:
		return "enable-scale-to-zero is false: kept at 1 pod", true
	case AwaitingActivation:
		secondsLeft := r.values[0]
		return "activating: waiting for pods and metrics; scale to zero after the activation timeout, " + secs(secondsLeft) + " from now", true
	case ActivationTimeout:
		timeoutSeconds := r.values[0]
		return "could not activate within progress-deadline + 30s (" + secs(timeoutSeconds) + "): scaled to zero", true
	case StableWindowHold:
		secondsLeft := r.values[0]
		return "no traffic, but active for less than a stable window: held at 1 pod for " + secs(secondsLeft) + " more", true
	case Deactivated:
		stableWindowSeconds := r.values[0]
		return "no traffic for a stable window (" + secs(stableWindowSeconds) + "): the revision becomes inactive", true
	case PodRetention:
		secondsLeft := r.values[0]
		return "scale-to-zero-pod-retention-period keeps the last pod for " + secs(secondsLeft) + " more", true
	case GracePeriod:
		inPathSeconds, graceSeconds := r.values[0], r.values[1]
		return "activator in the path for " + secs(inPathSeconds) + " of the " + secs(graceSeconds) + " scale-to-zero-grace-period: not scaling to zero yet", true
	case ScaledToZero:
		inactiveSeconds, inPathSeconds := r.values[0], r.values[1]
		return "scaled to zero: inactive for " + secs(inactiveSeconds) + ", activator in the path for " + secs(inPathSeconds), true
	case ActivatorNoReadyPods:
		return "activator in the path: no ready pod", true
	case ActivatorScaleUnknown:
		want := r.values[0]
		return "activator in the path: the scale is " + map[bool]string{true: "unknown", false: "zero"}[want < 0], true
	case ActivatorBurstCapacity:
		excessBurstCapacity, targetBurstCapacity := r.values[0], r.values[1]
		return "activator in the path: excess burst capacity " + num(excessBurstCapacity) + " < 0 (target-burst-capacity " + num(targetBurstCapacity) + ")", true
	case ActivatorOutOfPath:
		excessBurstCapacity := r.values[0]
		return "activator out of the path: excess burst capacity " + num(excessBurstCapacity) + " >= 0", true
	case StateChanged:
		state := r.values[0]
		s := "revision is now " + State(int(state)).String()
		if r.Detail != "" {
			s += " (" + r.Detail + ")"
		}
		return s, true
	}
	return "", false
}
