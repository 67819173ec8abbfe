package decider

import "time"

// recommend is one KPA decider tick with data (scenario spec "Decider",
// steps 1 to 7; Knative pkg/autoscaler/scaling/autoscaler.go Scale).
func (d *Decider) recommend(in Input, stable, panicAvg float64, dec *Decision) {
	rev := d.rev
	r1 := float64(max(in.Ready, 1))

	// 1. Pods for each average.
	dspc := toInt32(stable/rev.Target, ceil)
	dppc := toInt32(panicAvg/rev.Target, ceil)
	dec.add(Reason{Code: StableTarget, A: stable, B: rev.Target, C: float64(dspc)})

	// 2. Rate limits: at most max-scale-up-rate times, at least 1/max-scale-down-rate
	// of the ready pods (no floor when unreachable). The floor limits a
	// scale-down: it never raises the count above the scale last decided
	// (once the initial scale was reached: before, or after a restart,
	// that scale is not yet the revision's). Right after a scale-down the
	// ready count still holds the pods being removed (their termination
	// not seen yet), and a floor from it would scale straight back up
	// ("scaled from 4 to 5" for a rate limit).
	up := toInt32(rev.MaxScaleUpRate*r1, ceil)
	var down int32
	if in.Reachable {
		down = toInt32(r1/rev.MaxScaleDownRate, floor)
		if last := d.target.replicas; d.target.initialized && down > last {
			down = last
		}
	}
	s := clampRate(dspc, down, up, r1, dec)
	p := min(max(dppc, down), up)

	// 3. Activation scale: never fewer than activation-scale on the way up.
	if a := rev.ActivationScale; a > 1 {
		if dspc > 0 && s < a {
			dec.add(Reason{Code: ActivationScale, A: float64(s), B: float64(a)})
			s = a
		}
		if dppc > 0 && p < a {
			p = a
		}
	}

	// 4. Panic entry and exit.
	d.updatePanic(in.Now, dppc, r1, dec)

	// 5. In panic the count never goes down.
	want := s
	if d.panicking {
		dec.add(Reason{Code: PanicTarget, A: panicAvg, B: rev.Target, C: float64(dppc)})
		want = max(s, p, d.maxPanicPods)
		if want > max(s, p) {
			dec.add(Reason{Code: PanicHold, A: float64(max(s, p)), B: float64(want)})
		}
		d.maxPanicPods = want
	}

	// 6. Scale-down delay: the highest count of the last delay.
	if d.delay != nil && in.Reachable {
		d.delay.Record(in.Now, want)
		if held := d.delay.Current(); held > want {
			dec.add(Reason{Code: ScaleDownDelayed, A: float64(want), B: float64(held), C: rev.ScaleDownDelay.Seconds()})
			want = held
		}
	}
	d.recommendation = want

	// 7. Excess burst capacity, from the real ready count and the panic average.
	d.ebc = d.excessBurstCapacity(in.Ready, panicAvg)
}

func clampRate(pods, down, up int32, r1 float64, dec *Decision) int32 {
	switch {
	case pods > up:
		dec.add(Reason{Code: ScaleUpRateLimited, A: float64(pods), B: float64(up), C: r1})
		return up
	case pods < down:
		dec.add(Reason{Code: ScaleDownRateLimited, A: float64(pods), B: float64(down), C: r1})
		return down
	}
	return pods
}

// updatePanic enters (or extends) panic when the panic window needs at least
// panic-threshold times the ready pods, and leaves it on the first decision
// more than a stable window after the last such decision.
func (d *Decider) updatePanic(now time.Time, dppc int32, r1 float64, dec *Decision) {
	over := float64(dppc)/r1 >= d.rev.PanicThreshold
	switch {
	case over:
		if !d.panicking {
			dec.add(Reason{Code: PanicEntered, A: float64(dppc), B: r1, C: d.rev.PanicThreshold})
		}
		d.panicking, d.panicStart = true, now
	case d.panicking && d.panicStart.Add(d.rev.StableWindow).Before(now):
		dec.add(Reason{Code: PanicExited, A: d.rev.StableWindow.Seconds()})
		d.panicking, d.maxPanicPods = false, 0
	}
}

func (d *Decider) excessBurstCapacity(ready int32, panicAvg float64) int32 {
	tbc := d.rev.TargetBurstCapacity
	switch {
	case tbc == 0:
		return 0
	case tbc < 0:
		return -1
	}
	return toInt32(float64(ready)*d.rev.Total-tbc-panicAvg, floor)
}
