package decider

// maxMetricValue bounds every value a decider takes in: a second's
// concurrency and request rate, and each pod's sample. Real values are
// orders of magnitude lower (pkg/stats bounds one report at 1e6 requests in
// flight); the bound keeps sums over a window of an hour of seconds finite,
// so no average, recommendation or reason can become Inf or NaN.
const maxMetricValue = 1e12

// inBounds reports whether f is a number in [0, MaxMetricValue].
func inBounds(f float64) bool { return f >= 0 && f <= maxMetricValue }

// refuseOutOfBounds is the decider's guard against values that would
// poison its windows: a second whose totals are not finite, negative or
// above MaxMetricValue loses its metric (as if nothing was recorded), and a
// pod sample out of bounds is dropped (as if the pod did not answer). The
// callers (the autoscaler, scenario replays) validate their inputs; this
// guard holds whatever they miss. It reports whether anything was refused,
// and never writes to the caller's Pods.
func refuseOutOfBounds(in *Second) bool {
	refused := false
	if in.HasMetric && (!inBounds(in.Concurrency) || !inBounds(in.RPS)) {
		in.HasMetric, in.Concurrency, in.RPS = false, 0, 0
		refused = true
	}
	for i := range in.Pods {
		if podInBounds(&in.Pods[i]) {
			continue
		}
		pods := append([]PodSample(nil), in.Pods...) // the caller's slice stays as it was
		for j := i; j < len(pods); j++ {
			dropOutOfBounds(&pods[j])
		}
		in.Pods = pods
		return true
	}
	return refused
}

func podInBounds(p *PodSample) bool {
	for _, v := range [...]*float64{p.Concurrency, p.RPS, p.CPU, p.Memory} {
		if v != nil && !inBounds(*v) {
			return false
		}
	}
	for i := range p.Containers {
		c := &p.Containers[i]
		for _, v := range [...]*float64{c.CPU, c.Memory, &c.CPURequest, &c.MemoryRequest} {
			if v != nil && !inBounds(*v) {
				return false
			}
		}
	}
	return true
}

func dropOutOfBounds(p *PodSample) {
	for _, v := range [...]**float64{&p.Concurrency, &p.RPS, &p.CPU, &p.Memory} {
		if *v != nil && !inBounds(**v) {
			*v = nil
		}
	}
	if p.Containers == nil {
		return
	}
	p.Containers = append([]ContainerSample(nil), p.Containers...)
	for i := range p.Containers {
		c := &p.Containers[i]
		for _, v := range [...]**float64{&c.CPU, &c.Memory} {
			if *v != nil && !inBounds(**v) {
				*v = nil
			}
		}
		for _, v := range [...]*float64{&c.CPURequest, &c.MemoryRequest} {
			if !inBounds(*v) {
				*v = 0 // no request
			}
		}
	}
}
