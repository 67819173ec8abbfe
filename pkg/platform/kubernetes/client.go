package kubernetes

import (
	"fmt"

	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
)

// NewClient returns a clientset found as kubectl finds its cluster: the
// kubeconfig file, else $KUBECONFIG's files, else ~/.kube/config, in
// kubeContext (empty: the current context), else the pod's service
// account (cluster.RESTConfigFor, with its raised rate limit).
func NewClient(kubeconfig, kubeContext, userAgent string) (k8s.Interface, *rest.Config, error) {
	cfg, err := cluster.RESTConfigFor(kubeconfig, kubeContext, userAgent)
	if err != nil {
		return nil, nil, err
	}
	c, err := k8s.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return c, cfg, nil
}
