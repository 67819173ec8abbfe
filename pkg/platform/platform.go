// Package platform is what Ebb's two platforms have in common
// (pkg/platform/local on one machine, pkg/platform/kubernetes on a
// cluster): the Listener they feed the revisions and config-autoscaler to, and the
// Options every platform takes besides its own. It holds no mechanism:
// each platform reads its revisions its own way.
package platform

import (
	"context"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/autoscaler"
)

// Listener hears of the revisions a platform runs and of config-autoscaler;
// *autoscaler.Autoscaler is one. Its errors (an invalid ConfigMap or
// annotation) are reported by the platform where its users look (a log
// line; on a cluster also an Event); the listener keeps its previous
// configuration.
type Listener interface {
	SetConfig(data map[string]string) error
	Upsert(key autoscaler.RevisionKey, annotations map[string]string) error
	Delete(key autoscaler.RevisionKey)
}

// Options are the settings every platform takes; each platform's own
// Options embed them.
type Options struct {
	// Listener hears of revisions and the ConfigMap (nil: nobody; set it
	// later with the platform's SetListener, before Run).
	Listener Listener
	// Logger receives the platform's logs (nil: none).
	Logger *zap.Logger
}

// SetDefaults fills what was left empty.
func (o *Options) SetDefaults() {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
}

// Handoffer is an optional extension of Listener for a platform that
// shares revisions among several autoscalers: Handoff stops autoscaling
// revisions that another replica takes over, returning once no decision
// of this one can follow and their learned state is saved, so that the
// next owner starts from it. *autoscaler.Autoscaler is one.
type Handoffer interface {
	Handoff(ctx context.Context, keys ...autoscaler.RevisionKey)
}

// Labeler is an optional extension of Listener: SetLabels gives a
// revision's pod labels after Upsert, so that its metrics carry Knative's
// configuration_name and service_name (config.NamesOf).
// *autoscaler.Autoscaler is one.
type Labeler interface {
	SetLabels(key autoscaler.RevisionKey, labels map[string]string)
}
