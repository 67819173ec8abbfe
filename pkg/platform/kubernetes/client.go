package kubernetes

import (
	"fmt"
	"os"

	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// NewClient returns a clientset from a kubeconfig file (kubeconfig, else
// $KUBECONFIG) or, when neither is set, from the pod's service account.
// The rate limit is raised from client-go's 5/s: one autoscaler writes for
// every revision.
func NewClient(kubeconfig, userAgent string) (k8s.Interface, *rest.Config, error) {
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
		return nil, nil, fmt.Errorf("kubernetes client config (kubeconfig %q, else in-cluster): %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	cfg.UserAgent = userAgent
	c, err := k8s.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return c, cfg, nil
}
