package reconciler

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// Event reasons of the platform's own (the scale Events carry the
// decision's reason code instead).
const (
	ReasonAnnotationsRejected = "AnnotationsRejected"
	reasonAnnotationsApplied  = "AnnotationsApplied"
	ReasonConfigRejected      = "ConfigRejected"
	reasonConfigApplied       = "ConfigApplied"
	reasonRouteChanged        = "RouteChanged"
	reasonServiceConflict     = "ServiceConflict"
	reasonScaleFailed         = "ScaleFailed"
	// reasonPodsReady: a revision whose pods could not start has a ready
	// pod again. The Warning Events of a failure to start carry the
	// failure's own reason (podfailure.Reason*).
	reasonPodsReady = "PodsReady"
)

// eventMessageMax keeps a message under the API's 1 KiB limit on Events.
const eventMessageMax = 1000

// newEventRecorder returns a recorder that writes Events through the API as
// component "ebb-autoscaler" (or the given one), and a stop function. Its
// spam filter and aggregation are loosened so that every scale shows: one
// Event a second per object sustained, 100 at once.
func newEventRecorder(ctx context.Context, client k8s.Interface, component string) (record.EventRecorder, func()) {
	b := record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(record.CorrelatorOptions{
		BurstSize: 100, QPS: 1, MaxEvents: 1 << 20,
	}))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component}), b.Shutdown
}

func truncate(s string) string {
	if len(s) <= eventMessageMax {
		return s
	}
	return s[:eventMessageMax-3] + "..."
}
