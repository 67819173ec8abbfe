package behavior

import "fmt"

// Message explains the result to a person, with the numbers involved:
// what stabilization did, then what the policies and min/max did. It is
// built on demand so that Normalize does not allocate.
func (r Result) Message() string {
	if r.Stabilized == "" {
		return r.boundsMessage()
	}
	return r.stabilizedMessage() + "; " + r.limitMessage()
}

func (r Result) boundsMessage() string {
	switch r.Limit {
	case ReasonScalingDisabled:
		return fmt.Sprintf("scaling is disabled since the replica count of the target is zero (min %d)", r.Min)
	case ReasonTooManyReplicas:
		return fmt.Sprintf("current number of replicas %d above max %d: scaling to max at once, without stabilization or policies", r.Current, r.Max)
	default:
		return fmt.Sprintf("current number of replicas %d below min %d: scaling to min at once, without stabilization or policies", r.Current, r.Min)
	}
}

func (r Result) stabilizedMessage() string {
	switch r.Stabilized {
	case ReasonScaleUpStabilized:
		return fmt.Sprintf(
			"recent recommendations were lower than current one, applying the lowest recent recommendation: %d held at %d by the %s scale-up stabilization window",
			r.Desired,
			r.StabilizedReplicas,
			r.Window,
		)
	case ReasonScaleDownStabilized:
		window := "the " + r.Window.String() + " scale-down stabilization window"
		if r.Legacy {
			window = "the legacy " + r.Window.String() + " window"
		}
		return fmt.Sprintf("recent recommendations were higher than current one, applying the highest recent recommendation: %d held at %d by %s",
			r.Desired, r.StabilizedReplicas, window)
	}
	return fmt.Sprintf("recommended size %d needs no stabilization", r.Desired)
}

func (r Result) limitMessage() string {
	s := r.StabilizedReplicas
	switch r.Limit {
	case ReasonTooManyReplicas:
		return fmt.Sprintf("the desired replica count is more than the maximum replica count: %d capped at max %d", s, r.Replicas)
	case ReasonTooFewReplicas:
		return fmt.Sprintf("the desired replica count is less than the minimum replica count: %d raised to min %d", s, r.Replicas)
	case ReasonScaleUpLimit:
		if r.Legacy {
			return fmt.Sprintf("the desired replica count is increasing faster than the maximum scale rate: %d capped at max(2*%d, 4) = %d", s, r.Current, r.Replicas)
		}
		return fmt.Sprintf("the desired replica count is increasing faster than the maximum scale rate: %d capped at %d by the scaleUp policies (selectPolicy %s)",
			s, r.Replicas, r.Select)
	case ReasonScaleDownLimit:
		return fmt.Sprintf("the desired replica count is decreasing faster than the maximum scale rate: %d raised to %d by the scaleDown policies (selectPolicy %s)",
			s, r.Replicas, r.Select)
	}
	return fmt.Sprintf("the desired count %d is within the acceptable range", r.Replicas)
}
