//go:build nokubernetes

package main

import (
	"errors"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/activator"
	"ebb.dev/ebb/pkg/activator/statsclient"
)

// kubePlatform is unavailable in a build without Kubernetes (-tags
// nokubernetes): such a binary leaves out client-go and the Kubernetes
// API types, 14 MB of executable idling at 11 MiB resident instead of
// 27 MB and 17 MiB (the default build links only client-go's REST client
// and caches, not the typed clientset, which cost 46 MB and 27 MiB).
func kubePlatform(*config, *zap.Logger) (activator.Platform, statsclient.Router, error) {
	return nil, nil, errors.New("ACTIVATOR_PLATFORM=kubernetes: this activator was built with -tags nokubernetes; use ACTIVATOR_PLATFORM=file or a default build")
}
