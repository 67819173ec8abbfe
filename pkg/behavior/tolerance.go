package behavior

// Tolerance is the band around 1.0 inside which the usage ratio does not
// scale, per direction (Kubernetes' default is 0.1 both ways; bounds are
// inclusive).
type Tolerance struct {
	ScaleUp, ScaleDown float64
}

// DefaultTolerance is kube-controller-manager's
// --horizontal-pod-autoscaler-tolerance, for both directions.
const DefaultTolerance = 0.1

// ToleranceFor is the tolerance a behavior asks for: scaleUp.tolerance and
// scaleDown.tolerance, each overriding only its own direction,
// DefaultTolerance where unset (and for a nil behavior).
func ToleranceFor(b *Behavior) Tolerance {
	return ToleranceWith(b, DefaultTolerance)
}

// ToleranceWith is ToleranceFor with the cluster's tolerance def in place
// of DefaultTolerance (kube-controller-manager's
// --horizontal-pod-autoscaler-tolerance).
func ToleranceWith(b *Behavior, def float64) Tolerance {
	t := Tolerance{ScaleUp: def, ScaleDown: def}
	if b == nil {
		return t
	}
	if b.ScaleUp != nil && b.ScaleUp.Tolerance != nil {
		t.ScaleUp = *b.ScaleUp.Tolerance
	}
	if b.ScaleDown != nil && b.ScaleDown.Tolerance != nil {
		t.ScaleDown = *b.ScaleDown.Tolerance
	}
	return t
}

// Within reports whether ratio is inside the band:
// 1-ScaleDown <= ratio <= 1+ScaleUp, both bounds inclusive.
func (t Tolerance) Within(ratio float64) bool {
	return 1.0-t.ScaleDown <= ratio && ratio <= 1.0+t.ScaleUp
}
