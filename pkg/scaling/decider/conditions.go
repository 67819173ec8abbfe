package decider

// Condition is one of Kubernetes' HorizontalPodAutoscaler status
// conditions, as the HPA class's decision implies it.
type Condition struct {
	Type    string `json:"type"`   // AbleToScale, ScalingActive or ScalingLimited
	Status  string `json:"status"` // "True" or "False"
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// The HPA condition types.
const (
	ConditionAbleToScale    = "AbleToScale"
	ConditionScalingActive  = "ScalingActive"
	ConditionScalingLimited = "ScalingLimited"
)

// HPAConditions are the conditions a Kubernetes HPA would show after the
// HPA class's decision with these reasons, with Kubernetes' reasons and
// messages:
//
//   - AbleToScale: ScaleUpStabilized or ScaleDownStabilized when a
//     stabilization window held the count, else ReadyForNewScale. (Its
//     False reasons, FailedGetScale and FailedUpdateScale, are the
//     platform's: Ebb logs them and records a ScaleFailed Event.)
//   - ScalingActive: False with the first metric's failure when no metric
//     gave a count (FailedGetResourceMetric, FailedGetPodsMetric), else
//     True ValidMetricFound.
//   - ScalingLimited: True with the bound that changed the count
//     (TooManyReplicas, TooFewReplicas, ScaleUpLimit, ScaleDownLimit), else
//     False DesiredWithinRange.
func HPAConditions(reasons []Reason) []Condition {
	able := Condition{Type: ConditionAbleToScale, Status: "True", Reason: "ReadyForNewScale",
		Message: "recommended size matches current size"}
	active := Condition{Type: ConditionScalingActive, Status: "True", Reason: "ValidMetricFound",
		Message: "the HPA was able to successfully calculate a replica count"}
	limited := Condition{Type: ConditionScalingLimited, Status: "False", Reason: "DesiredWithinRange",
		Message: "the desired count is within the acceptable range"}
	var failed *Reason
	blind := false
	for i := range reasons {
		r := &reasons[i]
		switch r.Code {
		case ScaleUpStabilized, ScaleDownStabilized:
			able.Reason, able.Message = string(r.Code), r.Message()
		case TooManyReplicas, TooFewReplicas, ScaleUpLimit, ScaleDownLimit:
			limited.Status, limited.Reason, limited.Message = "True", string(r.Code), r.Message()
		case FailedGetResourceMetric, FailedGetPodsMetric:
			if failed == nil {
				failed = r
			}
		case MetricsUnavailable:
			blind = true
		case MetricReplicas:
			if active.Message == "the HPA was able to successfully calculate a replica count" {
				active.Message += " from " + r.Detail
			}
		}
	}
	if blind && failed != nil {
		active.Status, active.Reason = "False", string(failed.Code)
		active.Message = "the HPA was unable to compute the replica count: " + failed.Message()
	}
	return []Condition{able, active, limited}
}
