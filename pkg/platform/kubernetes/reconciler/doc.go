// Package reconciler is the autoscaler's platform on a Kubernetes cluster
// (Platform, which implements autoscaler.Platform, autoscaler.PodStater,
// autoscaler.ReasonedScaler and autoscaler.Warner).
//
// # What it owns
//
//   - Revisions: a Deployment with the label autoscaling.ebb.dev/enabled:
//     "true" is one revision. Its pod-template annotations and the
//     config-autoscaler ConfigMap in Ebb's namespace are given to the
//     Listener (the autoscaler) when they change; a rejection is reported
//     once per change as a Warning Event (on the Deployment, or on the
//     ConfigMap) and a log line, and the last good configuration stays.
//   - Routing, as Knative's ServerlessService does: for revision NAME it
//     owns the Service NAME (no selector; the one clients call) and its
//     EndpointSlice NAME-ebb, pointing at the ready activators or at the
//     revision's ready pods' queue-proxies, and the Service NAME-private
//     that selects the pods. All three are owned by the Deployment and
//     garbage-collected with it. The slice points at pods only when one is
//     Ready and has answered a probe (K-Network-Probe: queue); asked for
//     the activator, it returns once the slice says so, and a scale to
//     zero is refused while it does not.
//   - Scaling through deployments/scale, only of opted-in Deployments
//     (RBAC cannot select by label; this package does), with conflicts and
//     API errors retried with back-off, and an Event per change carrying
//     the decision's reason.
//   - The HPA class's pod states (PodStates), with the resource metrics
//     API read through resourcemetrics.
//   - With Options.Buckets, the share of one replica of a fleet: every
//     replica watches everything, but feeds, routes and scales only the
//     revisions of the buckets it holds (Gain, Lose: the bucket Leases
//     are package leader's).
//
// # What it must not do
//
// It decides nothing: every number comes from the autoscaler's decider.
// It writes only objects it owns (label app.kubernetes.io/managed-by:
// ebb: Services, EndpointSlices) and the scale of opted-in Deployments.
// No lock shared between revisions is held across an API call; a
// revision's own route lock is, so that a reconcile that read an older
// wish never overwrites a newer one.
//
// # Concurrency
//
// Informers feed two rate-limited work queues (Deployments, routes) whose
// workers reconcile; the autoscaler's revision goroutines call ReadyPods
// (from the cache), SetActivatorInPath and Scale directly.
package reconciler
