// Package behavior is Kubernetes' HorizontalPodAutoscaler decision on plain
// Go types: the replica count of one metric from per-pod samples (usage
// ratio, tolerance, the missing-sample and unready-pod rules), the
// combination of several metrics, and the normalization of the result by the
// autoscaling/v2 `behavior` (stabilization windows, Pods and Percent policies
// per period, selectPolicy, min/max) or by the legacy path when no behavior
// is given.
//
// It is the pure core of Ebb's HPA class and of the behavior annotation on
// the KPA class. Behavior, Rules and Policy mirror the k8s.io/api
// autoscaling/v2 types field for field (Tolerance as a float64 instead of a
// Quantity) so that this package imports the standard library only: the
// Kubernetes types pull in hundreds of packages, networking included, which
// the pure tier must not. Package hpa is the importable contract on the
// Kubernetes types; it converts and calls this package, and owns the
// parsing of the annotation.
//
// The semantics are kubernetes/kubernetes pkg/controller/podautoscaler
// (horizontal.go, replica_calculator.go) and pkg/apis/autoscaling (defaults,
// validation); each function names the Kubernetes function it follows. Deliberate differences: int32
// overflow saturates instead of wrapping, History prunes by the windows in
// force, Default fills scaleDown's 300 s window that Kubernetes takes from a
// controller flag, and utilization is computed from per-pod percentages of
// the request (equal requests, as all pods of one revision have).
//
// What it must not do: read a clock (time comes in as Now), perform I/O,
// log, start goroutines or lock. Normalize and History do not allocate in
// steady state (messages are built only when Result.Message is called), so
// the KPA tick with a behavior stays allocation-free. Every function but
// History's methods is safe for concurrent use; a History has one owner.
package behavior
