package behavior

// Normalize is one Kubernetes normalization: the metric proposal
// in.Desired, stabilized against in.Recommendations, limited by the scaling
// policies against in.ScaleUps and in.ScaleDowns, and clamped to
// [in.Min, in.Max]. With in.Behavior == nil it is the legacy path instead
// (inclusive 5-minute scale-down stabilization, scale-up cap
// max(2*Current, 4), no events), which differs from an empty behavior.
//
// Before normalizing it applies Kubernetes' reconcile rules for a current
// count outside the bounds, which skip stabilization and policies:
// Current > Max gives Max, Current < Min gives Min, and Current == 0 with
// Min != 0 means scaling is disabled and gives 0 (ReasonScalingDisabled).
// With 0 <= Min <= Max the result therefore always lies in [Min, Max] except
// in that disabled case.
//
// It is pure and does not allocate: it neither keeps nor mutates its input;
// History does the bookkeeping Kubernetes does after it.
func Normalize(in Input) Result {
	if in.Behavior == nil {
		return normalize(in, effective{}, effective{})
	}
	return normalize(in, effectiveUp(in.Behavior), effectiveDown(in.Behavior))
}

// normalize is Normalize with the behavior's rules already resolved (History
// resolves them once per decision).
func normalize(in Input, up, down effective) Result {
	r := Result{Current: in.Current, Desired: in.Desired, Min: in.Min, Max: in.Max, Legacy: in.Behavior == nil}
	if outOfBounds(in, &r) {
		return r
	}
	if in.Behavior == nil {
		normalizeLegacy(in, &r)
	} else { // normalizeDesiredReplicasWithBehaviors: stabilize, then the rate limit, then min/max inside it
		stabilize(in, up.window, down.window, &r)
		limitRate(in, up, down, &r)
	}
	return r
}

// outOfBounds is the first part of Kubernetes' reconcileAutoscaler: the
// cases in which no metric is read and no normalization happens.
func outOfBounds(in Input, r *Result) bool {
	switch {
	case in.Current == 0 && in.Min != 0:
		r.Replicas, r.Limit = 0, ReasonScalingDisabled
	case in.Current > in.Max:
		r.Replicas, r.Limit = in.Max, ReasonTooManyReplicas
	case in.Current < in.Min:
		r.Replicas, r.Limit = in.Min, ReasonTooFewReplicas
	default:
		return false
	}
	r.StabilizedReplicas = in.Current
	return true
}

// inBounds reports whether Normalize reaches normalization, and so whether
// Kubernetes records in.Desired as a recommendation: Current is in
// [Min, Max] and scaling is not disabled.
func inBounds(in Input) bool {
	var r Result
	return !outOfBounds(in, &r)
}

// normalizeLegacy is normalizeDesiredReplicas, the path of every HPA without
// behavior: stabilization over an inclusive 5-minute window (scale-down only:
// the maximum of the recent recommendations), then convertDesiredReplicasWithRules.
func normalizeLegacy(in Input, r *Result) {
	stabilizeLegacy(in, r)
	convertWithRules(in.Current, r.StabilizedReplicas, in.Min, in.Max, r)
}

// convertWithRules is Kubernetes' convertDesiredReplicasWithRules: the legacy
// per-sync scale-up cap max(2*current, 4) and min/max. The cap binds (reason
// ScaleUpLimit) only when it is strictly below max.
func convertWithRules(current, desired, minReplicas, maxReplicas int32, r *Result) {
	upLimit := legacyScaleUpLimit(current)
	maxAllowed, reason := int64(maxReplicas), ReasonTooManyReplicas
	if int64(maxReplicas) > upLimit {
		maxAllowed, reason = upLimit, ReasonScaleUpLimit
	}
	switch {
	case desired < minReplicas:
		r.Replicas, r.Limit = minReplicas, ReasonTooFewReplicas
	case int64(desired) > maxAllowed:
		r.Replicas, r.Limit = int32(maxAllowed), reason
	default:
		r.Replicas, r.Limit = desired, ReasonDesiredWithinRange
	}
}

// legacyScaleUpLimit is calculateScaleUpLimit: max(2*current, 4), computed
// in int64 so that it cannot overflow.
func legacyScaleUpLimit(current int32) int64 {
	return max(2*int64(current), 4)
}
