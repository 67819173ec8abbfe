package cluster

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// WritesQPS and WritesBurst are the API budget of everything the
// autoscaler does but its Leases (client-go's default is 5/s): one
// autoscaler writes for every revision. A wave of scale changes waits in
// this limiter and drains at WritesQPS; the Leases have a budget of
// their own (kubernetes.ClientsFor). The burst is small so that a wave
// leaves at the budget's pace from its first call: a burst of 100 from
// each replica reached the API server at once, overflowed its Priority
// and Fairness queues (a fenced write may wait there a quarter of its
// timeout) and came back 429 and 504, to be sent again.
const (
	WritesQPS   = 50
	WritesBurst = 10
)

// RESTConfig is RESTConfigFor with the kubeconfig's current context.
func RESTConfig(kubeconfig, userAgent string) (*rest.Config, error) {
	return RESTConfigFor(kubeconfig, "", userAgent)
}

// RESTConfigFor is the API server's address and credentials found as
// kubectl finds them (client-go's clientcmd loading rules): the file
// kubeconfig when given, else the files of $KUBECONFIG (a list, merged),
// else ~/.kube/config; the context kubeContext, else the current one;
// and when there is no kubeconfig at all, the pod's service account
// (in-cluster). The rate limit is raised from client-go's 5/s: one
// autoscaler writes for every revision.
func RESTConfigFor(kubeconfig, kubeContext, userAgent string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	cfg, err := cc.ClientConfig()
	if err != nil {
		where := "--kubeconfig " + kubeconfig
		if kubeconfig == "" {
			where = "$KUBECONFIG, ~/.kube/config, or the pod's service account"
		}
		if kubeContext != "" {
			where += ", context " + kubeContext
		}
		return nil, fmt.Errorf("kubernetes client config (from %s): %w", where, err)
	}
	cfg.QPS, cfg.Burst = WritesQPS, WritesBurst
	cfg.UserAgent = userAgent
	return cfg, nil
}
