package whatif

import (
	"encoding/json"
	"slices"
	"time"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/decider"
)

// summaryFunction is the function field of the summary line.
const summaryFunction = "*"

// Result is what one function (or, merged, a set of them) cost.
type Result struct {
	Function string
	// Requests arrived; ColdStarts of them found no ready replica.
	Requests, ColdStarts int64
	// ScaleFromZero counts the times ready replicas went from 0 to 1.
	ScaleFromZero int64
	// ReplicaStarts counts the replicas created (pre-warms included, and
	// those removed again before they were ready): each pulls, starts and
	// warms a container.
	ReplicaStarts int64
	// StartCost is the replica time Cost charges for each start.
	StartCost time.Duration
	// ParkedCost is what Cost charges for a parked replica-second, as a
	// fraction of an idle one (the revision's parked-cost; 0 without
	// parking). WakesFromParked counts the requests that woke a parked
	// replica (not cold starts: it is Ready).
	ParkedCost      float64
	WakesFromParked int64
	// PeakReplicas is the largest number of replicas that existed at once
	// (the sum of the peaks for a merged result).
	PeakReplicas int64
	// Policy is the scale-to-zero policy in effect.
	Policy string
	// Learned counts the learned policy's decisions by what they rested
	// on (not an output field: autoscaler tune prints it).
	Learned LearnedDecisions

	replicaNs, idleNs int64           // integrals in replica-nanoseconds
	parkedNs          int64           // the parked replicas' idle time (not in idleNs)
	waits             map[int64]int64 // wait in ms -> requests
}

// wait records one request's time before reaching the app.
func (r *Result) wait(ns int64) { r.waits[ns/int64(time.Millisecond)]++ }

// ReplicaSeconds is the integral of the replicas that exist (starting,
// ready or draining) over time.
func (r *Result) ReplicaSeconds() float64 { return float64(r.replicaNs) / 1e9 }

// IdleReplicaSeconds is the integral of the ready replicas with no request
// in flight over time.
func (r *Result) IdleReplicaSeconds() float64 { return float64(r.idleNs) / 1e9 }

// ParkedReplicaSeconds is the integral of the parked replicas with no
// request in flight over time (not in IdleReplicaSeconds).
func (r *Result) ParkedReplicaSeconds() float64 { return float64(r.parkedNs) / 1e9 }

// Cost is what the replicas cost beyond the requests' own time, in
// replica-seconds: the idle replica-seconds, the parked ones at
// ParkedCost, and StartCost for each replica start.
func (r *Result) Cost() float64 {
	return r.IdleReplicaSeconds() + r.ParkedCost*r.ParkedReplicaSeconds() + float64(r.ReplicaStarts)*r.StartCost.Seconds()
}

// ColdStartShare is ColdStarts / Requests, 0 without requests.
func (r *Result) ColdStartShare() float64 {
	if r.Requests == 0 {
		return 0
	}
	return float64(r.ColdStarts) / float64(r.Requests)
}

// WaitPercentileMs is the pct-th percentile (pct in [0, 100]) of the
// requests' waits in milliseconds, by nearest rank: the smallest wait w
// such that at least ceil(pct*N/100) requests (at least one) waited w or
// less; 0 without requests. The rank is computed in integers.
func (r *Result) WaitPercentileMs(pct int64) float64 {
	var n int64
	for _, c := range r.waits {
		n += c
	}
	if n == 0 {
		return 0
	}
	rank := max((pct*n+99)/100, 1)
	keys := slices.Sorted(func(yield func(int64) bool) {
		for k := range r.waits {
			if !yield(k) {
				return
			}
		}
	})
	var cum int64
	for _, k := range keys {
		cum += r.waits[k]
		if cum >= rank {
			return float64(k)
		}
	}
	return float64(keys[len(keys)-1])
}

// Merge adds o into r: the integers and the integrals add up, the waits
// join (so the percentiles are over all requests).
func (r *Result) Merge(o *Result) {
	r.Requests += o.Requests
	r.ColdStarts += o.ColdStarts
	r.ScaleFromZero += o.ScaleFromZero
	r.PeakReplicas += o.PeakReplicas
	r.ReplicaStarts += o.ReplicaStarts
	r.Learned.Phase += o.Learned.Phase
	r.Learned.Sequence += o.Learned.Sequence
	r.Learned.History += o.Learned.History
	r.Learned.Fallback += o.Learned.Fallback
	r.replicaNs += o.replicaNs
	r.idleNs += o.idleNs
	r.parkedNs += o.parkedNs
	r.WakesFromParked += o.WakesFromParked
	if r.waits == nil {
		r.waits = map[int64]int64{}
	}
	for k, c := range o.waits {
		r.waits[k] += c
	}
	if r.Policy == "" {
		r.Policy = o.Policy
	}
	if r.StartCost == 0 {
		r.StartCost = o.StartCost
	}
	if r.ParkedCost == 0 {
		r.ParkedCost = o.ParkedCost
	}
}

// LearnedDecisions counts the decisions that carry a reason of the
// learned policy, by what they rested on: the second of the minute at
// which the latest long gaps ended (decider.DetailPhase), the gaps that
// followed a gap like the latest one (decider.DetailSequence), the whole
// idle-gap history, or Knative's rules for want of history
// (LearnedFallback).
type LearnedDecisions struct {
	Phase, Sequence, History, Fallback int64
}

// count adds dec's learned reason, if it has one.
func (l *LearnedDecisions) count(dec *decider.Decision) {
	for _, r := range dec.Reasons() {
		switch r.Code {
		case decider.LearnedFallback:
			l.Fallback++
		case decider.PreWarm, decider.KeepAlive, decider.LearnedRelease:
			switch {
			case decider.RestedOnPhase(r):
				l.Phase++
			case decider.RestedOnSequence(r):
				l.Sequence++
			default:
				l.History++
			}
		}
	}
}

// NewSummary returns an empty summary for merging results into.
func NewSummary(policy string) Result {
	return Result{Function: summaryFunction, Policy: policy, waits: map[int64]int64{}}
}

// Line is one output line of `autoscaler whatif --output json`, with the
// fields in the contract's order, then Ebb's two more: an integer
// (summed by the summary, as the contract's integers) and a *Seconds
// field (summed, as the contract's).
type Line struct {
	Function           string  `json:"function"`
	Requests           int64   `json:"requests"`
	ColdStarts         int64   `json:"coldStarts"`
	ColdStartShare     float64 `json:"coldStartShare"`
	ScaleFromZero      int64   `json:"scaleFromZero"`
	WaitP50Ms          float64 `json:"waitP50Ms"`
	WaitP99Ms          float64 `json:"waitP99Ms"`
	ReplicaSeconds     float64 `json:"replicaSeconds"`
	IdleReplicaSeconds float64 `json:"idleReplicaSeconds"`
	PeakReplicas       int64   `json:"peakReplicas"`
	Policy             string  `json:"policy"`
	ReplicaStarts      int64   `json:"replicaStarts"`
	CostReplicaSeconds float64 `json:"costReplicaSeconds"`
	// With parking only (absent without, so that the lines stay the
	// contract's): the parked replicas' idle replica-seconds (charged in
	// the cost at the parked cost) and the wakes from parked.
	ParkedReplicaSeconds float64 `json:"parkedReplicaSeconds,omitempty"`
	WakesFromParked      int64   `json:"wakesFromParked,omitempty"`
}

// Line returns the output fields of r.
func (r *Result) Line() Line {
	return Line{Function: r.Function, Requests: r.Requests, ColdStarts: r.ColdStarts, ColdStartShare: r.ColdStartShare(),
		ScaleFromZero: r.ScaleFromZero, WaitP50Ms: r.WaitPercentileMs(50), WaitP99Ms: r.WaitPercentileMs(99),
		ReplicaSeconds: r.ReplicaSeconds(), IdleReplicaSeconds: r.IdleReplicaSeconds(), PeakReplicas: r.PeakReplicas, Policy: r.Policy,
		ReplicaStarts: r.ReplicaStarts, CostReplicaSeconds: r.Cost(), ParkedReplicaSeconds: r.ParkedReplicaSeconds(),
		WakesFromParked: r.WakesFromParked}
}

// AppendJSON appends r's output line (no newline) to b.
func (r *Result) AppendJSON(b []byte) []byte {
	js, err := json.Marshal(r.Line())
	if err != nil {
		panic(err) // a Line of finite numbers and strings always encodes
	}
	return append(b, js...)
}

// PolicyOf names the scale-to-zero policy of rev (config.ScaleToZeroKnative
// or config.ScaleToZeroLearned).
func PolicyOf(rev *config.Revision) string {
	return rev.ScaleToZeroPolicy
}
