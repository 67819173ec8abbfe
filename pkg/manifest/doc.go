// Package manifest decodes Kubernetes manifests (YAML or JSON, several
// documents per file, v1 Lists) into the objects Ebb reads: v1 ConfigMaps
// and apps/v1 Deployments. Other kinds are kept aside as Ignored so that a
// caller can say what it skipped.
//
// Decoding is as strict as a Kubernetes API server with field validation
// on: unknown fields, duplicate keys and non-string annotation or data
// values are errors, each naming the file, the document and the line. What
// the objects mean (autoscaler settings, revisions) is for the caller and
// pkg/config to decide.
//
// It is an edge package: it may use sigs.k8s.io/yaml and the k8s.io/api
// types, but performs no I/O (callers pass bytes) and does not import
// client-go. `autoscaler validate` uses it, and so will the local platform.
package manifest
