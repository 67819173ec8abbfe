//go:build !nokubernetes

package main

import (
	"fmt"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/activator"
	"ebb.dev/ebb/pkg/platform/kubernetes/activatorsource"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
)

// kubePlatform is the Kubernetes source: the lean one, on REST clients of
// three API groups, not the typed clientset (see activatorsource).
func kubePlatform(cfg *config, log *zap.Logger) (activator.Platform, error) {
	rc, err := cluster.RESTConfig(cfg.Kube.Kubeconfig, "ebb-activator/"+cfg.Activator.PodName)
	if err != nil {
		return nil, err
	}
	watches, err := activatorsource.NewRESTWatches(rc)
	if err != nil {
		return nil, err
	}
	src, err := activatorsource.New(activatorsource.Options{Watches: watches, Logger: log, Namespace: cfg.Kube.Namespace,
		ActivatorService: cfg.Kube.ActivatorService, QueueServingPort: int32(cfg.Kube.QueueServingPort), PodIP: cfg.Kube.PodIP})
	if err != nil {
		return nil, fmt.Errorf("kubernetes source: %w", err)
	}
	return src, nil
}
