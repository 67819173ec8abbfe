// Package hpa is Kubernetes' HorizontalPodAutoscaler decision, importable:
// the replica count of a Pods metric with an AverageValue target, the
// combination of several metrics, and the normalization of the result by
// stabilization windows, scaling policies and min/max (the autoscaling/v2
// `behavior` path, and the legacy path when no behavior is given).
//
// It is the `hpa` class of Ebb's decider, and it is meant to be usable on its
// own by anyone who wants Kubernetes' exact semantics in Go. The reference is
// kubernetes/kubernetes pkg/controller/podautoscaler (horizontal.go and
// replica_calculator.go, pkg/apis/autoscaling) as digested in the shared
// reference hpa.md; the comments on each function name the Kubernetes rule it
// follows and the few places where it deliberately differs: int32 overflow
// saturates instead of wrapping, History prunes by the windows in force, and
// DefaultBehavior fills scaleDown's 300 s window that Kubernetes takes from a
// controller flag.
//
// What it owns:
//
//   - NormalizeBehavior: one normalization, a pure function of BehaviorInput;
//   - ReplicasForPods and PodsReplicas: the replica calculator for per-pod
//     metrics (concurrency, rps, custom metrics);
//   - CombineRecommendations: the maximum over metrics, where a metric that
//     cannot be computed blocks scale-down but not scale-up;
//   - DefaultBehavior, ValidateBehavior and ParseBehavior: the behavior API
//     object and Ebb's `autoscaling.ebb.dev/behavior` annotation;
//   - History: the recommendations and scale events Kubernetes keeps in
//     memory per HPA, bounded in size.
//
// What it must not do: read a clock (time comes in as Now), perform I/O, log,
// start goroutines or lock. It imports the standard library, the
// k8s.io/api/autoscaling/v2 types, apimachinery's resource.Quantity and
// sigs.k8s.io/yaml, nothing else (no client-go). Every function but History's
// methods is safe for concurrent use because it touches only its arguments;
// a History has exactly one owner, the decider goroutine of one revision.
//
// Every number that a bound changed comes back with a machine-readable reason
// (Kubernetes' condition reasons: DesiredWithinRange, ScaleUpLimit,
// ScaleDownLimit, TooManyReplicas, TooFewReplicas; ReadyForNewScale,
// ScaleUpStabilized, ScaleDownStabilized) and a sentence for people.
package hpa
