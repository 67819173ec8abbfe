package decider

import (
	"errors"
	"math"
	"time"

	"ebb.dev/ebb/pkg/behavior"
	"ebb.dev/ebb/pkg/config"
)

// hpaDecider is the HPA class (autoscaling.knative.dev/class:
// hpa.autoscaling.knative.dev): Kubernetes' HorizontalPodAutoscaler on Ebb's
// metrics, one decision per tick (see doc.go for how it differs from
// Kubernetes). It keeps its own scale target: the replica count it last
// applied, which is Kubernetes' scale.spec.replicas.
type hpaDecider struct {
	rev        *config.Revision
	minR, maxR int32
	tol        behavior.Tolerance
	pods       podTable
	history    behavior.History

	recommendation int32 // the last combined proposal; -1 before the first
	replicas       int32
	state          State
	activator      bool

	// scratch space reused by every decision
	podMetrics []behavior.PodMetric
	proposals  []behavior.MetricProposal
	usages     []float64
}

// newHPA returns the HPA class's decider of a revision created at now with
// ready pods. Its scale target starts at the initial scale, or at the ready
// count when that is higher (an autoscaler restart finds the revision
// running; Kubernetes reads scale.spec.replicas).
func newHPA(rev *config.Revision, ready int32) *hpaDecider {
	h := &hpaDecider{
		rev:            rev,
		minR:           max(rev.MinScale, 1), // Knative's HPA class never scales to zero
		maxR:           rev.MaxScale,
		tol:            behavior.ToleranceWith(rev.Behavior, rev.HPATolerance),
		pods:           newPodTable(rev),
		recommendation: -1,
		replicas:       max(rev.InitialReplicas, ready),
		state:          activating,
		activator:      true,
	}
	if h.maxR == 0 {
		h.maxR = math.MaxInt32
	}
	return h
}

func (h *hpaDecider) record(now time.Time, in *Second, ready int32) {
	pods := in.Pods
	if pods == nil {
		pods = derivePods(in.Concurrency, in.RPS, ready)
	}
	h.pods.record(now, pods)
}

// wantsPoke: the HPA class never scales to zero, so it never needs a
// decision between ticks.
func (h *hpaDecider) wantsPoke(*Second) bool { return false }

// decide is one Kubernetes reconcile: the bounds, else every metric's count,
// their combination, and the normalization by the behavior.
func (h *hpaDecider) decide(in Input, dec *Decision) {
	*dec = Decision{At: in.Now, Class: h.rev.Class}
	current := h.replicas
	h.history.Seed(in.Now, current)
	desired := current
	switch {
	case current > h.maxR:
		desired = h.maxR
		dec.add(tooManyReplicasReason(float64(current), float64(h.maxR), boundsDetail))
	case current < h.minR:
		desired = h.minR
		dec.add(tooFewReplicasReason(float64(current), float64(h.minR), boundsDetail))
	default:
		desired = h.scale(in.Now, current, dec)
	}
	if desired != current {
		if h.rev.Behavior != nil {
			h.history.RecordScale(in.Now, current, desired)
		}
		h.replicas = desired
	}
	h.route(in, dec)
	dec.Recommended, dec.Desired = h.recommendation, h.replicas
	dec.EBC, dec.ActivatorInPath, dec.State = 0, h.activator, h.state
}

// scale computes every metric's count, combines them (a metric that cannot
// be computed blocks a scale-down, not a scale-up) and normalizes the
// result by the behavior, or by the legacy path without one.
func (h *hpaDecider) scale(now time.Time, current int32, dec *Decision) int32 {
	h.proposals, h.usages = h.proposals[:0], h.usages[:0]
	for i, m := range h.rev.Metrics {
		var res behavior.PodsResult
		var err error
		if c := h.pods.noRequest[i]; c != "" {
			err = errNoRequest
			dec.addKeyed(failedGetResourceMetricReason(noRequestKind, m.Name()+noRequestSep+c))
		} else {
			h.podMetrics = h.pods.samples(now, i, h.podMetrics)
			res, err = behavior.Replicas(current, h.podMetrics, h.targetOf(m, now), h.tol)
			h.metricReasons(m, res, err, dec)
		}
		h.proposals = append(h.proposals, behavior.MetricProposal{Metric: m.Name(), Replicas: res.Replicas, Err: err})
		h.usages = append(h.usages, res.Usage)
	}
	c := behavior.Combine(current, h.proposals)
	if !c.Proceed {
		if c.Blocked > 0 || h.anyValid() {
			dec.add(scaleDownBlockedReason(float64(c.Blocked), float64(current)))
		} else {
			dec.add(metricsUnavailableReason(float64(current)))
		}
		return current
	}
	h.recommendation = c.Desired
	dec.HasData, dec.Stable = true, h.usageOf(c.Metric)
	res := h.history.Normalize(behavior.Input{Now: now, Current: current, Min: h.minR, Max: h.maxR,
		Desired: c.Desired, Behavior: h.rev.Behavior, LegacyWindow: &h.rev.HPADownscaleStabilization})
	behaviorReasons(res, res.Replicas, dec)
	return res.Replicas
}

// targetOf is metric m's target: an average per pod for concurrency and
// rps, a utilization of the request for cpu and memory, with cpu's
// readiness rules reading the samples' window.
func (h *hpaDecider) targetOf(m config.MetricTarget, now time.Time) behavior.Target {
	t := behavior.Target{Kind: behavior.AverageValue, Value: m.Target}
	if m.Utilization() {
		t.Kind = behavior.Utilization
	}
	if m.Metric == config.MetricCPU {
		t.CPU, t.Now, t.Window = true, now, h.pods.window
		t.InitializationPeriod, t.ReadinessDelay = h.rev.HPACPUInitializationPeriod, h.rev.HPAInitialReadinessDelay
	}
	return t
}

// errNoRequest: a container the utilization metric reads has no request
// (Kubernetes: "missing request for cpu in container X").
var errNoRequest = errors.New("a container has no request for the resource")

// The FailedGetResourceMetric reason of a missing request: A is
// noRequestKind, Detail the metric's name and the container, joined by
// noRequestSep.
const (
	noRequestKind = 3
	noRequestSep  = "|"
)

func (h *hpaDecider) anyValid() bool {
	for _, p := range h.proposals {
		if p.Err == nil {
			return true
		}
	}
	return false
}

func (h *hpaDecider) usageOf(metric string) float64 {
	for i, p := range h.proposals {
		if p.Metric == metric {
			return h.usages[i]
		}
	}
	return 0
}

// metricReasons explains one metric's count: its usage against the target,
// and the rule that shaped it (tolerance, filled-in pods, direction flip).
func (h *hpaDecider) metricReasons(m config.MetricTarget, res behavior.PodsResult, err error, dec *Decision) {
	if err != nil {
		kind := 2.0
		if errors.Is(err, behavior.ErrNoPods) {
			kind = 1
		}
		if m.Resource() {
			dec.addKeyed(failedGetResourceMetricReason(kind, m.Name()))
		} else {
			dec.addKeyed(failedGetPodsMetricReason(kind, m.Name()))
		}
		return
	}
	dec.addKeyed(metricReplicasReason(res.Usage, m.Target, float64(res.Replicas), m.Name()))
	low, high := 1-h.tol.ScaleDown, 1+h.tol.ScaleUp
	switch res.Rule {
	case behavior.RuleWithinTolerance:
		dec.addKeyed(withinToleranceReason(res.Ratio, low, high, m.Name()))
	case behavior.RuleRebalancedWithinTolerance:
		dec.addKeyed(withinToleranceReason(res.NewRatio, low, high, m.Name()))
	case behavior.RuleRebalanced:
		dec.addKeyed(podsRebalancedReason(float64(res.Missing), float64(res.Unready), res.NewRatio, m.Name()))
	case behavior.RuleDirectionFlip:
		dec.addKeyed(directionFlipReason(res.Ratio, res.NewRatio, m.Name()))
	}
}

// route puts the activator in the path exactly while no pod is ready (it
// buffers requests while the first pods start), and marks the revision
// active once a pod is ready. The HPA class never scales to zero, so the
// activator is never needed for capacity, and target-burst-capacity does
// not apply.
func (h *hpaDecider) route(in Input, dec *Decision) {
	inPath, state := in.Ready == 0, active
	if inPath {
		state = activating
		dec.add(activatorNoReadyPodsReason())
	} else {
		dec.add(activatorNotNeededReason())
	}
	h.activator = inPath
	if state != h.state {
		h.state = state
		dec.add(stateChangedReason(state, ""))
	}
}
