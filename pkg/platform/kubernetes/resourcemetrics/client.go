package resourcemetrics

import (
	"fmt"

	"k8s.io/client-go/rest"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"
)

// NewClient returns the resource metrics API (metrics.k8s.io/v1beta1,
// served by metrics-server) on the same config, read raw in JSON and
// decoded by DecodePodMetricsList (Raw), uncompressed: the API
// server gzips an answer over 128 KiB for a client that accepts it, and
// inflating 1,000 pods' List costs the autoscaler more CPU than decoding
// it (BenchmarkResourceMetricsRead).
func NewClient(cfg *rest.Config) (Source, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.DisableCompression = true
	c, err := metricsclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("resource metrics client: %w", err)
	}
	return raw(c.RESTClient()), nil
}
