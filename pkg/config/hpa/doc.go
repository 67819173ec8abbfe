// Package hpa is Kubernetes' HorizontalPodAutoscaler decision, importable,
// on Kubernetes' own types (k8s.io/api/autoscaling/v2): the replica count of
// a Pods metric with an AverageValue target, the combination of several
// metrics, and the normalization of the result by stabilization windows,
// scaling policies and min/max (the autoscaling/v2 `behavior` path, and the
// legacy path when no behavior is given). Its API is a published contract,
// used from other packages as TestSpecAPIFromOutside uses it.
//
// The algorithm lives in package behavior (pkg/behavior), on plain
// mirror types, because Ebb's decider is pure and must not import the
// Kubernetes types (they pull in networking, klog and hundreds of
// packages). Every function here converts its arguments and calls
// behavior: there is one implementation of each rule. ToBehavior is the
// conversion; the reference for the semantics is behavior's documentation.
//
// What it owns besides the conversions:
//
//   - ParseBehavior, ValidateBehavior and DefaultBehavior: the behavior API
//     object and Ebb's `autoscaling.ebb.dev/behavior` annotation, on
//     Kubernetes' types (a tolerance Quantity is kept exactly);
//   - DocumentParser: the parser of the JSON and YAML annotations
//     (behavior, and the HPA class's `autoscaling.ebb.dev/metrics` list)
//     that every program passes to config.NewRevision, the one entry point
//     to a complete config.Revision.
//
// What it must not do: read a clock (time comes in as Now), perform I/O,
// log, start goroutines or lock. It imports the standard library, the
// k8s.io/api/autoscaling/v2 types, apimachinery's resource.Quantity,
// sigs.k8s.io/yaml and Ebb's pure packages, nothing else (no client-go).
// Because of the Kubernetes types, only programs (package main: cmd/,
// hack/) import it:
// packages take a config.DocumentParser instead (hack/checkimports).
// Every function but History's methods is safe for concurrent use; a
// History has exactly one owner.
//
// Every number that a bound changed comes back with a machine-readable reason
// (Kubernetes' condition reasons: DesiredWithinRange, ScaleUpLimit,
// ScaleDownLimit, TooManyReplicas, TooFewReplicas; ReadyForNewScale,
// ScaleUpStabilized, ScaleDownStabilized) and a sentence for people.
package hpa
