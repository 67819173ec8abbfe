package reconciler

import (
	"context"
	"errors"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"ebb.dev/ebb/pkg/platform/kubernetes/fence"
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
// Event a second per object sustained, 100 at once. An Event about a
// revision (its Deployment) is a write for it, fenced by its bucket as
// the scale it records (fenced).
func newEventRecorder(ctx context.Context, client k8s.Interface, component string,
	fenced func(context.Context, types.NamespacedName) (context.Context, error)) (record.EventRecorder, func()) {
	b := record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(record.CorrelatorOptions{
		BurstSize: 100, QPS: 1, MaxEvents: 1 << 20,
	}))
	b.StartRecordingToSink(fencedSink{ctx: ctx, events: client.CoreV1().Events(""), fenced: fenced})
	return b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component}), b.Shutdown
}

// fencedSink writes Events; one whose object is a Deployment goes with its
// revision's fence (checked now, and again by the transport as it is
// sent). A refused one is dropped, not retried: the recorder gives up on
// an API error (a 409 that names the fence), where it would retry a
// transport error for minutes.
type fencedSink struct {
	ctx    context.Context
	events typedcorev1.EventInterface
	fenced func(context.Context, types.NamespacedName) (context.Context, error)
}

func (s fencedSink) Create(e *corev1.Event) (*corev1.Event, error) {
	ctx, err := s.claim(e)
	if err != nil {
		return nil, err
	}
	out, err := s.events.CreateWithEventNamespaceWithContext(ctx, e)
	return out, refused(err)
}

func (s fencedSink) Update(e *corev1.Event) (*corev1.Event, error) {
	ctx, err := s.claim(e)
	if err != nil {
		return nil, err
	}
	out, err := s.events.UpdateWithEventNamespaceWithContext(ctx, e)
	return out, refused(err)
}

func (s fencedSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	ctx, err := s.claim(e)
	if err != nil {
		return nil, err
	}
	out, err := s.events.PatchWithEventNamespaceWithContext(ctx, e, data)
	return out, refused(err)
}

// claim is the context of writing e: its revision's fence when it is about
// a Deployment, checked now.
func (s fencedSink) claim(e *corev1.Event) (context.Context, error) {
	o := e.InvolvedObject
	if o.Kind != "Deployment" || s.fenced == nil {
		return s.ctx, nil
	}
	ctx, err := s.fenced(s.ctx, types.NamespacedName{Namespace: o.Namespace, Name: o.Name})
	return ctx, refused(err)
}

// refused turns a fence's refusal into the API error the recorder drops
// the Event on (it retries other errors).
func refused(err error) error {
	if !errors.Is(err, fence.ErrFenced) {
		return err
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusConflict,
		Reason: metav1.StatusReasonConflict, Message: "the Event is not written: " + err.Error()}}
}

func truncate(s string) string {
	if len(s) <= eventMessageMax {
		return s
	}
	return s[:eventMessageMax-3] + "..."
}
