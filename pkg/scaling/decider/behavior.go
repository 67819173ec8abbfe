package decider

import (
	"math"
	"time"

	"ebb.dev/ebb/pkg/behavior"
)

// limitByBehavior applies the revision's behavior
// (autoscaling.ebb.dev/behavior) to the KPA's recommendation: Kubernetes'
// normalization with the scale target's replica count as the current
// count, after the KPA's own rate limits, panic and scale-down delay, and
// before the scale target's min/max (so Min is 0 and Max unbounded here:
// min-scale, max-scale and initial scale stay the scale target's, applied
// after). The raw recommendation is what the history stores; the
// normalized one is the recommendation.
//
// One rule is Ebb's: a revision at zero replicas with a positive
// recommendation always gets at least one pod. Kubernetes never meets zero
// (its minimum is at least 1), and a Percent-only scaleUp policy would
// otherwise allow 0% of 0 pods forever.
func (d *Decider) limitByBehavior(now time.Time, dec *Decision) {
	current, wanted := d.target.replicas, d.recommendation
	res := d.history.Normalize(behavior.Input{
		Now: now, Current: current, Min: 0, Max: math.MaxInt32,
		Desired: wanted, Behavior: d.rev.Behavior,
	})
	got := res.Replicas
	if current == 0 && wanted > 0 && got < 1 {
		got = 1
	}
	behaviorReasons(res, got, dec)
	d.recommendation = got
}

// recordScale stores a change of the scale target's replicas as a scale
// event, which the behavior's policies count (Kubernetes stores every
// rescale, the jumps to min and max included, when a behavior is set).
func (d *Decider) recordScale(now time.Time, from int32) {
	if d.history != nil {
		d.history.RecordScale(now, from, d.target.replicas)
	}
}

// behaviorReasons adds the reasons of a normalization whose outcome is got:
// one for stabilization and one for the policies or bounds, when they
// changed the number.
func behaviorReasons(res behavior.Result, got int32, dec *Decision) {
	switch res.Stabilized {
	case behavior.ReasonScaleUpStabilized:
		dec.add(scaleUpStabilizedReason(float64(res.Desired), float64(res.StabilizedReplicas), res.Window.Seconds()))
	case behavior.ReasonScaleDownStabilized:
		r := scaleDownStabilizedReason(float64(res.Desired), float64(res.StabilizedReplicas), res.Window.Seconds(), "")
		if res.Legacy {
			r.Detail = legacyDetail
		}
		dec.add(r)
	}
	wanted, current := float64(res.StabilizedReplicas), float64(res.Current)
	switch res.Limit {
	case behavior.ReasonScaleUpLimit:
		r := scaleUpLimitReason(wanted, float64(got), current, "")
		if !res.Legacy {
			r.Detail = string(res.Select)
		}
		dec.add(r)
	case behavior.ReasonScaleDownLimit:
		dec.add(scaleDownLimitReason(wanted, float64(got), current, string(res.Select)))
	case behavior.ReasonTooManyReplicas:
		dec.add(tooManyReplicasReason(wanted, float64(got), ""))
	case behavior.ReasonTooFewReplicas:
		dec.add(tooFewReplicasReason(wanted, float64(got), ""))
	}
}
