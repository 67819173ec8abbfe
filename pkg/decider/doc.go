// Package decider is Ebb's scaling core: one Decider per revision turns
// per-second metric samples into decisions.
//
// A Decider owns the metric windows of one revision, the KPA decider state
// (recommendation, panic mode, excess burst capacity, scale-down delay
// window) and the scale-target model that Knative keeps in its KPA
// reconciler (min/max and initial scale, scale-to-zero grace, pod retention,
// activation timeout, activator in or out of the path). Keeping every bound
// that shapes the replica count here is what lets `autoscaler simulate`
// replay a live run exactly.
//
// It is pure: it takes samples and the time, performs no I/O, reads no
// clock, logs nothing and does not allocate per decision in steady state.
// It is not safe for concurrent use: one goroutine owns a Decider.
//
// Every Decision carries its reasons: a machine-readable Code for each bound
// that changed the number, each panic transition, each state change and why
// the activator is (or is not) in the path, with a sentence for people
// (Reason.Message). The semantics are those of ../../shared/spec/scenario-format.md
// (Knative Serving's KPA), restated step by step in the comments of kpa.go
// and target.go.
package decider
