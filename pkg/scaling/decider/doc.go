// Package decider is Ebb's scaling core: one decider per revision turns
// per-second metric samples into decisions. It has two classes behind one
// schedule (Stepper) and one Decision type, so that `autoscaler simulate`
// and the live autoscaler drive both alike.
//
// The KPA class (Decider) owns the metric windows of one revision, the KPA
// decider state (recommendation, panic mode, excess burst capacity,
// scale-down delay window) and the scale-target model that Knative keeps in
// its KPA reconciler (min/max and initial scale, scale-to-zero grace, pod
// retention, activation timeout, activator in or out of the path). Keeping
// every bound that shapes the replica count here is what lets `autoscaler
// simulate` replay a live run exactly. The semantics are those of the
// scenario format (docs/scenarios.md; Knative Serving's KPA), restated
// step by step in the comments of kpa.go and target.go.
//
// With autoscaling.ebb.dev/behavior the KPA's recommendation (after its own
// rate limits, panic, activation scale and scale-down delay) is normalized
// by Kubernetes' HPA behavior before the scale target's min/max: the
// current count is the scale target's replicas, every change of them is a
// scale event, and the raw KPA recommendations are the history the
// stabilization windows read (behavior.go). Without a behavior the KPA is
// exactly Knative's.
//
// The HPA class (hpaclass.go, class hpa.autoscaling.knative.dev) is
// Kubernetes' HorizontalPodAutoscaler on Ebb's metrics (package
// pkg/behavior holds the algorithm): per-pod samples of each metric
// averaged over the stable window (hpapods.go), the replica count per
// metric with tolerance and the missing/unready rules, the largest count
// over the metrics (a metric that cannot be computed blocks scale-down),
// then the behavior or the legacy path, within [max(min-scale, 1),
// max-scale]. It differs from Kubernetes in these ways, all documented in
// docs/scenarios.md: it decides every tick-interval (2s) instead of every
// 15s, so the legacy path's cap max(2×current, 4) applies per tick; a pod's
// start time is the first second it was listed; and its activator is in the
// path only while no pod is ready (Knative's HPA class never uses it; Ebb
// lets it buffer requests while the first pods start).
//
// It is pure: it takes samples and the time, performs no I/O, reads no
// clock, logs nothing. The KPA class does not allocate per decision in
// steady state, with or without a behavior. A decider is not safe for
// concurrent use: one goroutine owns it.
//
// Every Decision carries its reasons: a machine-readable Code for each bound
// that changed the number, each panic transition, each state change and why
// the activator is (or is not) in the path, with a sentence for people
// (Reason.Message). The behavior's reasons are Kubernetes' (ScaleUpLimit,
// ScaleDownStabilized, TooFewReplicas, ...); the HPA class adds one reason
// per metric.
package decider
