//go:build nokubernetes

package main

import (
	"errors"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/activator"
)

// kubePlatform is unavailable in a build without Kubernetes (-tags
// nokubernetes): such a binary leaves out client-go, about 30 MB of
// executable and 15 MiB of resident memory at idle.
func kubePlatform(*config, *zap.Logger) (activator.Platform, error) {
	return nil, errors.New("ACTIVATOR_PLATFORM=kubernetes: this activator was built with -tags nokubernetes; use ACTIVATOR_PLATFORM=file or a default build")
}
