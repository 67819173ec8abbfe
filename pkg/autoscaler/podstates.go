package autoscaler

import (
	"context"
	"time"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/decider"
	"ebb.dev/ebb/pkg/scaling/secondloop"
)

// podStater is an optional extension of Platform for the HPA class: every
// pod of a revision (ready or not, pending, terminating) with its state and
// its containers' resource usage. When the platform implements it, the HPA
// class reads pods through it, so that Kubernetes' rules for unready,
// pending and initializing pods apply, and cpu and memory can be measured.
type podStater interface {
	PodStates(ctx context.Context, rev RevisionKey) ([]PodState, error)
}

// PodState is one pod of a revision as the platform sees it.
type PodState struct {
	Pod // Name, StatsAddr (scraped only when Ready), Started
	// Phase is Pending, Running, Succeeded or Failed ("" is Running).
	Phase    string
	Ready    bool
	Deleting bool
	// ReadySince is the last transition of the Ready condition (zero:
	// unknown; the decider then takes the second it saw the change).
	ReadySince time.Time
	// Containers are the containers' usage (last second, or the metrics
	// API's window) and requests; nil when the platform measured nothing.
	Containers []decider.ContainerSample
}

// servesQueueProxy reports whether a pod in this state is scraped: Running,
// Ready and not terminating, as ReadyPods would list it.
func (s *PodState) servesQueueProxy() bool {
	return s.Ready && !s.Deleting && (s.Phase == "" || s.Phase == "Running")
}

// needsQueueProxy reports whether any metric of the revision is measured by
// the queue-proxy (concurrency, rps) rather than by the platform.
func needsQueueProxy(metrics []config.MetricTarget) bool {
	for _, m := range metrics {
		if !m.Resource() {
			return true
		}
	}
	return false
}

// secondOfStates is one second of an HPA-class revision read through a
// podStater: every pod with its state and containers, the ready ones
// scraped only when a metric needs the queue-proxy.
func (r *revision) secondOfStates(ctx context.Context, sec int64, ps podStater, sc *scratch) {
	states, err := ps.PodStates(ctx, r.key)
	if err != nil {
		r.log().Warn("listing pods failed; no decision this second", zap.Error(err))
		return
	}
	sc.all = grow(sc.all, len(states))
	for i := range states {
		s := &states[i]
		sc.all[i] = decider.PodSample{Name: s.Name, Phase: s.Phase, Ready: s.Ready, Deleting: s.Deleting,
			Started: s.Started, ReadySince: s.ReadySince, Containers: s.Containers}
		if s.servesQueueProxy() {
			sc.pods = append(sc.pods, s.Pod)
			sc.index = append(sc.index, i)
		}
	}
	var direct [2]float64
	if len(sc.pods) > 0 && needsQueueProxy(r.cfg.rev.Metrics) {
		direct = r.scrapeEach(ctx, sc.pods, sc)
		for j, i := range sc.index {
			sc.all[i].Concurrency, sc.all[i].RPS = sc.samples[j].Concurrency, sc.samples[j].RPS
		}
	}
	sc.closing = secondloop.Closing{Sec: sec, Ready: int32(len(sc.pods)), PerPod: true, Pods: sc.all, Direct: direct}
	r.close(ctx, sc)
}
