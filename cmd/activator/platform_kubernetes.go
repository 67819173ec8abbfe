package main

import (
	"errors"
	"net/netip"
	"strconv"

	ebbconfig "ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/envconfig"
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
	return setting{Flag: "platform", Env: "ACTIVATOR_PLATFORM", Default: platformFile,
		Doc: "where revisions come from: file (ACTIVATOR_REVISIONS_FILE) or kubernetes (the cluster's opted-in Deployments)",
		Apply: func(c *config, v string) error {
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
		{Flag: "kubeconfig", Env: "ACTIVATOR_KUBECONFIG", Default: "", Doc: "kubernetes: kubeconfig file (empty: $KUBECONFIG, else the pod's service account)",
			Apply: envconfig.String(func(c *config) *string { return &c.Kube.Kubeconfig })},
		{Flag: "namespace", Env: ebbconfig.EnvPodNamespace, Default: ebbconfig.SystemNamespace, Doc: "kubernetes: Ebb's namespace (the activator's Service)",
			Apply: envconfig.DNSLabel(func(c *config) *string { return &c.Kube.Namespace })},
		{Flag: "activator-service", Env: "ACTIVATOR_SERVICE", Default: ebbconfig.ActivatorName,
			Doc: "kubernetes: the activators' Service; its ready endpoints are the activators sharing each " +
				"replica",
			Apply: envconfig.DNSLabel(func(c *config) *string { return &c.Kube.ActivatorService })},
		{Flag: "queue-serving-port", Env: "ACTIVATOR_QUEUE_SERVING_PORT", Default: strconv.Itoa(ebbconfig.QueueServingPort),
			Doc: "kubernetes: the queue-proxy's serving port in the revisions' " +
				"pods",
			Apply: envconfig.Int(1, 65535, func(c *config) *int { return &c.Kube.QueueServingPort })},
		{Flag: "pod-ip", Env: ebbconfig.EnvPodIP, Default: "",
			Doc: "kubernetes: this activator's address (the downward API's status.podIP), to find its " +
				"position among the ready activators (empty: unknown)",
			Apply: podIP},
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
