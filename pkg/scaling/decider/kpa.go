package decider

import "time"

// recommend is one KPA decider tick with data (scenario spec "Decider",
// steps 1 to 7; Knative pkg/autoscaler/scaling/autoscaler.go Scale).
func (d *Decider) recommend(in Input, stable, panicAvg float64, dec *Decision) {
	rev := d.rev
	readyPods := float64(max(in.Ready, 1)) // the rates and the panic threshold count at least one pod

	// 1. Pods for each average.
	desiredStablePods := toInt32(stable/rev.Target, ceil)
	desiredPanicPods := toInt32(panicAvg/rev.Target, ceil)
	dec.add(stableTargetReason(stable, rev.Target, float64(desiredStablePods)))

	// 2. Rate limits: at most max-scale-up-rate times, at least 1/max-scale-down-rate
	// of the ready pods (no floor when unreachable). The floor limits a
	// scale-down: it never raises the count above the scale last decided
	// (once the initial scale was reached: before, or after a restart,
	// that scale is not yet the revision's). Right after a scale-down the
	// ready count still holds the pods being removed (their termination
	// not seen yet), and a floor from it would scale straight back up
	// ("scaled from 4 to 5" for a rate limit).
	up := toInt32(rev.MaxScaleUpRate*readyPods, ceil)
	var down int32
	if in.Reachable {
		down = toInt32(readyPods/rev.MaxScaleDownRate, floor)
		if last := d.target.replicas; d.target.initialized && down > last {
			down = last
		}
	}
	stablePods := clampRate(desiredStablePods, down, up, readyPods, dec)
	panicPods := min(max(desiredPanicPods, down), up)

	// 3. Activation scale: never fewer than activation-scale on the way up.
	if activationScale := rev.ActivationScale; activationScale > 1 {
		if desiredStablePods > 0 && stablePods < activationScale {
			dec.add(activationScaleReason(float64(stablePods), float64(activationScale)))
			stablePods = activationScale
		}
		if desiredPanicPods > 0 && panicPods < activationScale {
			panicPods = activationScale
		}
	}

	// 4. Panic entry and exit.
	d.updatePanic(in.Now, desiredPanicPods, readyPods, dec)

	// 5. In panic the count never goes down.
	want := stablePods
	if d.panicking {
		dec.add(panicTargetReason(panicAvg, rev.Target, float64(desiredPanicPods)))
		want = max(stablePods, panicPods, d.maxPanicPods)
		if want > max(stablePods, panicPods) {
			dec.add(panicHoldReason(float64(max(stablePods, panicPods)), float64(want)))
		}
		d.maxPanicPods = want
	}

	// 6. Scale-down delay: the highest count of the last delay.
	if d.delay != nil && in.Reachable {
		d.delay.Record(in.Now, want)
		if held := d.delay.Current(); held > want {
			dec.add(scaleDownDelayedReason(float64(want), float64(held), rev.ScaleDownDelay.Seconds()))
			want = held
		}
	}
	d.recommendation = want

	// 7. Excess burst capacity, from the real ready count and the panic average.
	d.ebc = d.excessBurstCapacity(in.Ready, panicAvg)
}

// clampRate holds pods within [down, up], the rate limits from readyPods.
func clampRate(pods, down, up int32, readyPods float64, dec *Decision) int32 {
	switch {
	case pods > up:
		dec.add(scaleUpRateLimitedReason(float64(pods), float64(up), readyPods))
		return up
	case pods < down:
		dec.add(scaleDownRateLimitedReason(float64(pods), float64(down), readyPods))
		return down
	}
	return pods
}

// updatePanic enters (or extends) panic when the panic window needs at least
// panic-threshold times the ready pods, and leaves it on the first decision
// more than a stable window after the last such decision.
func (d *Decider) updatePanic(now time.Time, desiredPanicPods int32, readyPods float64, dec *Decision) {
	over := float64(desiredPanicPods)/readyPods >= d.rev.PanicThreshold
	switch {
	case over:
		if !d.panicking {
			dec.add(panicEnteredReason(float64(desiredPanicPods), readyPods, d.rev.PanicThreshold))
		}
		d.panicking, d.panicStart = true, now
	case d.panicking && d.panicStart.Add(d.rev.StableWindow).Before(now):
		dec.add(panicExitedReason(d.rev.StableWindow.Seconds()))
		d.panicking, d.maxPanicPods = false, 0
	}
}

// excessBurstCapacity is the spare capacity of the ready pods beyond the
// panic average and target-burst-capacity (0: off, -1: the activator always
// in the path).
func (d *Decider) excessBurstCapacity(ready int32, panicAvg float64) int32 {
	targetBurstCapacity := d.rev.TargetBurstCapacity
	switch {
	case targetBurstCapacity == 0:
		return 0
	case targetBurstCapacity < 0:
		return -1
	}
	return toInt32(float64(ready)*d.rev.Total-targetBurstCapacity-panicAvg, floor)
}
