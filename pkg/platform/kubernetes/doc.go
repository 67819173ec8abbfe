// Package kubernetes is Ebb's platform on a Kubernetes cluster: the only
// part of Ebb that imports client-go. This package makes the client
// (NewClient); each role is a sub-package of its own, wired together in
// cmd/autoscaler and cmd/activator:
//
//   - reconciler: the autoscaler's Platform. It feeds the opted-in
//     Deployments and config-autoscaler to the autoscaler, owns each
//     revision's Services and EndpointSlice (routing), scales through
//     deployments/scale and records Events.
//   - leader: who does what among the autoscaler replicas: the elected
//     leader (Lease ebb-autoscaler) for the work done once per cluster,
//     and each replica's share of the bucket Leases (Buckets): the
//     revisions it decides for.
//   - resourcemetrics: the resource metrics API (metrics.k8s.io PodMetrics)
//     read and decoded for the HPA class, and each pod's state as the HPA
//     reads it.
//   - statsauth: who may post stats (TokenReview of the activators'
//     projected ServiceAccount tokens).
//   - learnedstore: the learned scale-to-zero policy's state, kept in
//     ConfigMaps of Ebb's namespace.
//   - activatorsource: the activator's view of the cluster, on lean REST
//     clients.
//   - cluster: what the autoscaler's and the activator's parts read the
//     same way (the client config, pod readiness, the activators'
//     endpoints), without the typed clientset.
package kubernetes
