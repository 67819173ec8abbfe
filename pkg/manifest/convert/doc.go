// Package convert turns Knative Services and Configurations, and
// Kubernetes HorizontalPodAutoscalers with the Deployments they target,
// into what Ebb runs on a cluster: opted-in Deployments (the label
// autoscaling.ebb.dev/enabled: "true") whose pod templates carry the
// equivalent annotations. `autoscaler convert` is its command.
//
// The short form (the default) relies on the queue-proxy injection
// webhook: the label on the Deployment and on a Knative revision's pod
// template (the webhook selects pods by their own labels), the
// annotations, and the app's container as written, with Knative's
// timeouts as the queue-proxy's REVISION_*_TIMEOUT_SECONDS in its
// environment (the injection copies them into the sidecar). A Deployment
// converted from an HPA on cpu and memory is labelled on the Deployment
// only: it needs no queue-proxy (kubernetes.Sidecarless).
//
// Options.Sidecar writes the long form instead, for clusters without the
// webhook: LongForm applies the webhook's own patch (pkg/manifest/inject) to the
// pod template, so there is one copy of the sidecar's wiring.
//
// What cannot be converted is an error naming the object, the field and
// the fix; nothing is dropped silently. Objects convert does not touch (a
// config-autoscaler ConfigMap, Deployments no HPA targets, Services) pass
// through unchanged, so that the output can replace the input.
//
// It is an edge package on k8s.io/api types: it reads a manifest.Set and
// returns objects and bytes; it performs no I/O.
package convert
