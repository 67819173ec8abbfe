//go:build !nokubernetes

package main

import (
	"fmt"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/activator"
	"ebb.dev/ebb/pkg/platform/kubernetes"
)

// kubePlatform is the Kubernetes source.
func kubePlatform(cfg *config, log *zap.Logger) (activator.Platform, error) {
	client, _, err := kubernetes.NewClient(cfg.Kube.Kubeconfig, "ebb-activator/"+cfg.Activator.PodName)
	if err != nil {
		return nil, err
	}
	src, err := kubernetes.NewActivatorSource(kubernetes.Options{Client: client, Logger: log, Namespace: cfg.Kube.Namespace,
		ActivatorService: cfg.Kube.ActivatorService, QueueServingPort: int32(cfg.Kube.QueueServingPort)})
	if err != nil {
		return nil, fmt.Errorf("kubernetes source: %w", err)
	}
	return src, nil
}
