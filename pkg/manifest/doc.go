// Package manifest decodes Kubernetes manifests (YAML or JSON, several
// documents per file, v1 Lists) into the objects Ebb reads: v1 ConfigMaps,
// apps/v1 Deployments, Knative serving.knative.dev/v1 Services and
// Configurations, and autoscaling/v2 (and v1) HorizontalPodAutoscalers.
// Other kinds are kept aside as Ignored so that a caller can say what it
// skipped.
//
// A Knative Service or Configuration is read as the Deployment Ebb runs
// for it (one entry point: callers see one kind of revision): the
// template's annotations, containerConcurrency as the annotation
// autoscaling.ebb.dev/container-concurrency, the pod spec with PORT set to
// the container port, the opt-in label; its timeouts and whatever Ebb
// cannot honour (a traffic split, a second container: Knative.Errors) or
// reads differently (Knative.Warnings) ride along, each naming the field.
//
// Decoding is as strict as a Kubernetes API server with field validation
// on: unknown fields, duplicate keys and non-string annotation or data
// values are errors, each naming the file, the document and the line. What
// the objects mean (autoscaler settings, revisions) is for the caller and
// pkg/config to decide.
//
// It is an edge package: it may use sigs.k8s.io/yaml and the k8s.io/api
// types, but performs no I/O (callers pass bytes) and does not import
// client-go. `autoscaler validate`, `autoscaler convert` and the local
// platform use it.
package manifest
