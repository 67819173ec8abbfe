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
	// MaxMetricValue] were left out since the last decision (A=seconds,
	// B=the bound).
	MetricRefused Code = "MetricRefused"
	// StableTarget: the stable average over the per-pod target (A=average,
	// B=target, C=pods).
	StableTarget Code = "StableTarget"
	// PanicTarget: in panic, the panic average over the target (A=average,
	// B=target, C=pods).
	PanicTarget Code = "PanicTarget"
	// ScaleUpRateLimited: max-scale-up-rate capped the count (A=wanted,
	// B=allowed, C=ready).
	ScaleUpRateLimited Code = "ScaleUpRateLimited"
	// ScaleDownRateLimited: max-scale-down-rate held the count up (A=wanted,
	// B=allowed, C=ready).
	ScaleDownRateLimited Code = "ScaleDownRateLimited"
	// ActivationScale: raised to activation-scale (A=wanted, B=activation scale).
	ActivationScale Code = "ActivationScale"
	// PanicEntered: the panic average needs panic-threshold times the ready
	// pods (A=pods for the panic average, B=ready, C=threshold).
	PanicEntered Code = "PanicEntered"
	// PanicExited: no over-threshold decision for more than a stable window
	// (A=stable window seconds).
	PanicExited Code = "PanicExited"
	// PanicHold: in panic the count never goes down (A=wanted, B=held).
	PanicHold Code = "PanicHold"
	// ScaleDownDelayed: scale-down-delay kept a higher recent count (A=wanted,
	// B=held, C=delay seconds).
	ScaleDownDelayed Code = "ScaleDownDelayed"
)

// Reasons of the scale target (what Knative's KPA reconciler decides).
const (
	// NoMetricsYet: no decision with data yet; the scale is left as it is.
	NoMetricsYet Code = "NoMetricsYet"
	// MinScale: raised to min-scale (A=wanted, B=min-scale).
	MinScale Code = "MinScale"
	// InitialScale: raised to initial-scale until it is first reached
	// (A=wanted, B=initial scale).
	InitialScale Code = "InitialScale"
	// MaxScale: capped at max-scale (A=wanted, B=max-scale).
	MaxScale Code = "MaxScale"
	// ScaleToZeroDisabled: enable-scale-to-zero is false; kept at 1.
	ScaleToZeroDisabled Code = "ScaleToZeroDisabled"
	// AwaitingActivation: activating without a usable recommendation; the
	// scale is left alone until the activation timeout (A=seconds left).
	AwaitingActivation Code = "AwaitingActivation"
	// ActivationTimeout: activating for longer than progress-deadline + 30s;
	// scaled to zero (A=timeout seconds).
	ActivationTimeout Code = "ActivationTimeout"
	// StableWindowHold: active for less than a stable window; held at one
	// pod (A=seconds left).
	StableWindowHold Code = "StableWindowHold"
	// Deactivated: active for a stable window and the recommendation is 0;
	// the revision becomes inactive (A=stable window seconds).
	Deactivated Code = "Deactivated"
	// PodRetention: scale-to-zero-pod-retention-period keeps the last pod
	// (A=seconds left).
	PodRetention Code = "PodRetention"
	// GracePeriod: the activator has not been in the path for the
	// scale-to-zero grace period yet (A=seconds in path, B=grace seconds).
	GracePeriod Code = "GracePeriod"
	// ScaledToZero: every scale-to-zero condition holds (A=inactive seconds,
	// B=activator seconds in path).
	ScaledToZero Code = "ScaledToZero"
)

// Reasons of the learned scale-to-zero policy (learned/policy.go).
const (
	// LearnedFallback: too few idle gaps seen yet; Knative's scale-to-zero
	// rules apply (A=gaps seen, B=gaps needed).
	LearnedFallback Code = "LearnedFallback"
	// PreWarm: a replica is started ahead of a request the idle-gap history
	// expects (A=seconds until the expected range of idle time starts,
	// B=gaps that ended in it, C=gaps that lasted that long).
	PreWarm Code = "PreWarm"
	// KeepAlive: the replica is kept through a range of idle time where the
	// history expects a request (A, B, C as PreWarm).
	KeepAlive Code = "KeepAlive"
	// LearnedRelease: no request is expected soon enough to pay for a
	// replica; released until the next range worth one (A=seconds until
	// it, -1 for none; B=gaps that lasted this long; C=all gaps).
	LearnedRelease Code = "LearnedRelease"
)

// Reasons of routing and state.
const (
	// ActivatorNoReadyPods: no ready pod, so requests go through the activator.
	ActivatorNoReadyPods Code = "ActivatorNoReadyPods"
	// ActivatorScaleUnknown: the scale is unknown or zero, so requests go
	// through the activator (A=want).
	ActivatorScaleUnknown Code = "ActivatorScaleUnknown"
	// ActivatorBurstCapacity: the excess burst capacity is negative (A=EBC,
	// B=target-burst-capacity).
	ActivatorBurstCapacity Code = "ActivatorBurstCapacity"
	// ActivatorOutOfPath: enough spare capacity; requests go to the pods
	// directly (A=EBC).
	ActivatorOutOfPath Code = "ActivatorOutOfPath"
	// StateChanged: the revision became activating, active or inactive
	// (A=the new State).
	StateChanged Code = "StateChanged"
)

// Reason is one machine-readable reason with the numbers it speaks of. The
// meaning of A, B and C depends on the Code (see each constant).
type Reason struct {
	Code    Code
	A, B, C float64
	// Detail qualifies StateChanged ("NoTraffic", "TimedOut", "Queued"),
	// the policy reasons (the selectPolicy), the HPA class's metric
	// reasons (the metric) and the learned policy's reasons
	// (DetailRestored, DetailSequence).
	Detail string
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
		return num(r.A) + " second(s) of metrics left out: a value was not a number in [0, " + num(r.B) + "]", true
	case StableTarget:
		return "stable average " + num(r.A) + " over a per-pod target of " + num(r.B) + " needs " + num(r.C) + " pods", true
	case PanicTarget:
		return "panic average " + num(r.A) + " over a per-pod target of " + num(r.B) + " needs " + num(r.C) + " pods", true
	case ScaleUpRateLimited:
		return "max-scale-up-rate allows at most " + num(r.B) + " pods from " + num(r.C) + " ready; wanted " + num(r.A), true
	case ScaleDownRateLimited:
		return "max-scale-down-rate allows no fewer than " + num(r.B) + " pods from " + num(r.C) + " ready; wanted " + num(r.A), true
	case ActivationScale:
		return "raised from " + num(r.A) + " to activation-scale " + num(r.B) + " on the way up from zero", true
	case PanicEntered:
		return "panic mode: the panic window needs " + num(r.A) + " pods, at least " + num(r.C*100) + "% of " + num(max(r.B, 1)) + " ready", true
	case PanicExited:
		return "left panic mode: no burst over the threshold for more than the stable window (" + secs(r.A) + ")", true
	case PanicHold:
		return "in panic mode the count never goes down: held at " + num(r.B) + " (wanted " + num(r.A) + ")", true
	case ScaleDownDelayed:
		return "scale-down-delay " + secs(r.C) + " holds the highest recent count " + num(r.B) + " (wanted " + num(r.A) + ")", true
	}
	return "", false
}

func targetMessage(r Reason) (string, bool) {
	switch r.Code {
	case NoMetricsYet:
		return "no decision with data yet: the scale is left as it is", true
	case MinScale:
		return "raised from " + num(r.A) + " to min-scale " + num(r.B), true
	case InitialScale:
		return "raised from " + num(r.A) + " to initial-scale " + num(r.B) + " until it is first reached", true
	case MaxScale:
		return "capped from " + num(r.A) + " at max-scale " + num(r.B), true
	case ScaleToZeroDisabled:
		return "enable-scale-to-zero is false: kept at 1 pod", true
	case AwaitingActivation:
		return "activating: waiting for pods and metrics; scale to zero after the activation timeout, " + secs(r.A) + " from now", true
	case ActivationTimeout:
		return "could not activate within progress-deadline + 30s (" + secs(r.A) + "): scaled to zero", true
	case StableWindowHold:
		return "no traffic, but active for less than a stable window: held at 1 pod for " + secs(r.A) + " more", true
	case Deactivated:
		return "no traffic for a stable window (" + secs(r.A) + "): the revision becomes inactive", true
	case PodRetention:
		return "scale-to-zero-pod-retention-period keeps the last pod for " + secs(r.A) + " more", true
	case GracePeriod:
		return "activator in the path for " + secs(r.A) + " of the " + secs(r.B) + " scale-to-zero-grace-period: not scaling to zero yet", true
	case ScaledToZero:
		return "scaled to zero: inactive for " + secs(r.A) + ", activator in the path for " + secs(r.B), true
	case ActivatorNoReadyPods:
		return "activator in the path: no ready pod", true
	case ActivatorScaleUnknown:
		return "activator in the path: the scale is " + map[bool]string{true: "unknown", false: "zero"}[r.A < 0], true
	case ActivatorBurstCapacity:
		return "activator in the path: excess burst capacity " + num(r.A) + " < 0 (target-burst-capacity " + num(r.B) + ")", true
	case ActivatorOutOfPath:
		return "activator out of the path: excess burst capacity " + num(r.A) + " >= 0", true
	case StateChanged:
		s := "revision is now " + State(int(r.A)).String()
		if r.Detail != "" {
			s += " (" + r.Detail + ")"
		}
		return s, true
	}
	return "", false
}
