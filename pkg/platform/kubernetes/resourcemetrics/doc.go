// Package resourcemetrics reads the resource metrics API
// (metrics.k8s.io/v1beta1 PodMetrics, served by metrics-server) for the
// HPA class: a Source lists one namespace (Raw: the JSON read raw and
// decoded by DecodePodMetricsList for only what the HPA reads), a Reader
// lists each namespace at most once per period whatever the number of
// revisions asking, and PodState turns a pod, its Deployment's template
// and the usage into what the decider reads (requests and usage per
// container).
//
// It decides nothing and writes nothing; what a List does not say is a
// missing pod, as for Kubernetes' HPA.
package resourcemetrics
