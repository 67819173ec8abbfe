package kubernetes

import (
	"fmt"

	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

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
