package behavior

import "time"

// stabilize is stabilizeRecommendationWithBehaviors. A recommendation is in
// a window iff it is strictly younger than the window (rec.At after
// Now-window), so one exactly as old as the window is outside.
//
//	upFloor  = min(Desired, recommendations in the scale-up window)
//	downCeil = max(Desired, recommendations in the scale-down window)
//	result   = Current raised to upFloor, then lowered to downCeil
//
// A scale-up therefore goes only as high as the lowest recent
// recommendation, a scale-down only as low as the highest, and when the
// windows disagree with the direction the count stays put.
func stabilize(in Input, upWindow, downWindow time.Duration, r *Result) {
	upCutoff, downCutoff := in.Now.Add(-upWindow), in.Now.Add(-downWindow)
	upFloor, downCeil := in.Desired, in.Desired
	if in.index != nil {
		if v, ok := in.index.minAfter(upCutoff); ok {
			upFloor = min(upFloor, v)
		}
		if v, ok := in.index.maxAfter(downCutoff, false); ok {
			downCeil = max(downCeil, v)
		}
	} else {
		for _, rec := range in.Recommendations {
			if rec.At.After(upCutoff) {
				upFloor = min(upFloor, rec.Replicas)
			}
			if rec.At.After(downCutoff) {
				downCeil = max(downCeil, rec.Replicas)
			}
		}
	}
	replicas := in.Current
	if replicas < upFloor {
		replicas = upFloor
	}
	if replicas > downCeil {
		replicas = downCeil
	}
	r.StabilizedReplicas = replicas
	r.Stabilized = stabilizedReason(in.Current, in.Desired, replicas)
	r.Window = downWindow
	if r.Stabilized == ReasonScaleUpStabilized {
		r.Window = upWindow
	}
}

// stabilizedReason follows normalizeDesiredReplicasWithBehaviors: the reason
// names the direction of Desired against Current (>= is "up") and is set
// only when stabilization changed the value.
func stabilizedReason(current, desired, result int32) string {
	switch {
	case result == desired:
		return ReasonReadyForNewScale
	case desired >= current:
		return ReasonScaleUpStabilized
	default:
		return ReasonScaleDownStabilized
	}
}

// stabilizeLegacy is stabilizeRecommendation, the legacy path: the maximum
// of Desired and every recommendation not older than 5 minutes. Unlike the
// behavior path the window is inclusive: a recommendation exactly 5 minutes
// old still counts (Kubernetes drops only those Before the cutoff).
func stabilizeLegacy(in Input, r *Result) {
	window := in.legacyWindow()
	cutoff := in.Now.Add(-window)
	replicas := in.Desired
	if in.index != nil {
		if v, ok := in.index.maxAfter(cutoff, true); ok {
			replicas = max(replicas, v)
		}
	} else {
		for _, rec := range in.Recommendations {
			if !rec.At.Before(cutoff) && rec.Replicas > replicas {
				replicas = rec.Replicas
			}
		}
	}
	r.StabilizedReplicas, r.Window = replicas, window
	r.Stabilized = ReasonReadyForNewScale
	if replicas != in.Desired {
		r.Stabilized = ReasonScaleDownStabilized
	}
}

// legacyWindow is LegacyWindow, or its default.
func (in *Input) legacyWindow() time.Duration {
	if in.LegacyWindow != nil {
		return *in.LegacyWindow
	}
	return LegacyDownscaleStabilization
}
