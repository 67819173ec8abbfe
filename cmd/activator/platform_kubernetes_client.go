//go:build !nokubernetes

package main

import (
	"fmt"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/activator"
	"ebb.dev/ebb/pkg/activator/statsclient"
	ebbconfig "ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/activatorsource"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
)

// kubePlatform is the Kubernetes source: the lean one, on REST clients of
// four API groups, not the typed clientset (see activatorsource); and the
// routes of the reports to the autoscaler replicas, from their Leases.
func kubePlatform(cfg *config, log *zap.Logger) (activator.Platform, statsclient.Router, error) {
	rc, err := cluster.RESTConfig(cfg.Kube.Kubeconfig, ebbconfig.ActivatorName+"/"+cfg.Activator.PodName)
	if err != nil {
		return nil, nil, err
	}
	watches, err := activatorsource.NewRESTWatches(rc)
	if err != nil {
		return nil, nil, err
	}
	src, err := activatorsource.New(activatorsource.Options{Watches: watches, Logger: log, Namespace: cfg.Kube.Namespace,
		ActivatorService: cfg.Kube.ActivatorService, QueueServingPort: int32(cfg.Kube.QueueServingPort), PodIP: cfg.Kube.PodIP})
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes source: %w", err)
	}
	return src, src.Autoscalers(), nil
}
