package main

import (
	"errors"
	"net/netip"
)

// Platform sources of the activator (ACTIVATOR_PLATFORM).
const (
	platformFile       = "file"
	platformKubernetes = "kubernetes"
)

// kubeConfig is the Kubernetes source's part of the configuration.
type kubeConfig struct {
	Kubeconfig       string
	Namespace        string
	ActivatorService string
	QueueServingPort int
	PodIP            string // this activator's address; empty: unknown
}

// platformSetting chooses the source; it comes before revisions-file,
// which only the file source requires.
func platformSetting() setting {
	return setting{"platform", "ACTIVATOR_PLATFORM", platformFile,
		"where revisions come from: file (ACTIVATOR_REVISIONS_FILE) or kubernetes (the cluster's opted-in Deployments)",
		func(c *config, v string) error {
			if v != platformFile && v != platformKubernetes {
				return errors.New("must be file or kubernetes")
			}
			c.Platform = v
			return nil
		}}
}

// revisionsFile is required with the file source only.
func revisionsFile(c *config, v string) error {
	if v == "" && c.Platform == platformFile {
		return errors.New("must be set")
	}
	c.RevisionsFile = v
	return nil
}

// kubeSettings are the Kubernetes source's rows of the table.
func kubeSettings() []setting {
	return []setting{
		{"kubeconfig", "ACTIVATOR_KUBECONFIG", "", "kubernetes: kubeconfig file (empty: $KUBECONFIG, else the pod's service account)",
			str(func(c *config) *string { return &c.Kube.Kubeconfig })},
		{"namespace", "POD_NAMESPACE", "ebb-system", "kubernetes: Ebb's namespace (the activator's Service)",
			label(func(c *config) *string { return &c.Kube.Namespace })},
		{
			"activator-service",
			"ACTIVATOR_SERVICE",
			"ebb-activator",
			"kubernetes: the activators' Service; its ready endpoints are the activators sharing each replica",
			label(func(c *config) *string { return &c.Kube.ActivatorService }),
		},
		{"queue-serving-port", "ACTIVATOR_QUEUE_SERVING_PORT", "8012", "kubernetes: the queue-proxy's serving port in the revisions' pods",
			intCount(1, 65535, func(c *config) *int { return &c.Kube.QueueServingPort })},
		{
			"pod-ip",
			"POD_IP",
			"",
			"kubernetes: this activator's address (the downward API's status.podIP), to find its position among the ready activators (empty: unknown)",
			podIP,
		},
	}
}

// podIP is empty or an IP address, kept as the API writes it: it is
// compared with the addresses of the activator's EndpointSlices.
func podIP(c *config, v string) error {
	if v != "" {
		if _, err := netip.ParseAddr(v); err != nil {
			return errors.New("must be an IP address such as 10.0.0.1, or empty")
		}
	}
	c.Kube.PodIP = v
	return nil
}
