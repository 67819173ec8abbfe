package kubernetes

import (
	"fmt"

	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"

	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
)

// NewClient returns a clientset from a kubeconfig file (kubeconfig, else
// $KUBECONFIG) or, when neither is set, from the pod's service account
// (cluster.RESTConfig, with its raised rate limit).
func NewClient(kubeconfig, userAgent string) (k8s.Interface, *rest.Config, error) {
	cfg, err := cluster.RESTConfig(kubeconfig, userAgent)
	if err != nil {
		return nil, nil, err
	}
	c, err := k8s.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return c, cfg, nil
}

// NewMetricsClient returns the resource metrics API (metrics.k8s.io/v1beta1,
// served by metrics-server) on the same config, read raw in JSON and
// decoded by DecodePodMetricsList (RawPodMetrics), uncompressed: the API
// server gzips an answer over 128 KiB for a client that accepts it, and
// inflating 1,000 pods' List costs the autoscaler more CPU than decoding
// it (BenchmarkResourceMetricsRead).
func NewMetricsClient(cfg *rest.Config) (PodMetricsSource, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.DisableCompression = true
	c, err := metricsclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("resource metrics client: %w", err)
	}
	return RawPodMetrics(c.RESTClient()), nil
}
