package cluster

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// RESTConfig is the API server's address and credentials from a
// kubeconfig file (kubeconfig, else $KUBECONFIG) or, when neither is set,
// from the pod's service account. The rate limit is raised from
// client-go's 5/s: one autoscaler writes for every revision.
func RESTConfig(kubeconfig, userAgent string) (*rest.Config, error) {
	if kubeconfig == "" {
		kubeconfig = os.Getenv("KUBECONFIG")
	}
	var (
		cfg *rest.Config
		err error
	)
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes client config (kubeconfig %q, else in-cluster): %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	cfg.UserAgent = userAgent
	return cfg, nil
}
