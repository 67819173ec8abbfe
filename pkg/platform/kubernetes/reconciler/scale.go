package reconciler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"ebb.dev/ebb/pkg/autoscaler"
)

// errActivatorNotInPath refuses a scale to zero while the revision's
// Service does not point at a ready activator: a request would go nowhere.
var errActivatorNotInPath = errors.New("the activator is not in the path")

// Scale implements autoscaler.Platform.
func (p *Platform) Scale(ctx context.Context, key autoscaler.RevisionKey, n int32) error {
	return p.ScaleWithReason(ctx, key, n, autoscaler.ScaleReason{})
}

// ScaleWithReason implements autoscaler.ReasonedScaler: it sets the
// replicas of an opted-in Deployment through its scale subresource,
// retrying conflicts and transient API errors with back-off, and records
// an Event on the Deployment whose reason is the decision's. A scale to
// zero is refused unless the Service points at the activator.
func (p *Platform) ScaleWithReason(ctx context.Context, key autoscaler.RevisionKey, n int32, why autoscaler.ScaleReason) error {
	d, err := p.deployment(key) // only opted-in Deployments, whatever RBAC allows
	if err != nil {
		return err
	}
	if n == 0 {
		if err := p.activatorRouted(key); err != nil {
			return err
		}
	}
	var from int32
	cached := d // the first try writes on the cached Deployment's resourceVersion
	tries, err := p.retry(ctx, func() error {
		if c := cached; c != nil {
			cached = nil
			if c.Spec.Replicas != nil && *c.Spec.Replicas != n {
				from = *c.Spec.Replicas
				err := p.updateScale(ctx, key, n, c.ResourceVersion)
				if !apierrors.IsConflict(err) {
					return err
				}
				// The cache is behind the Deployment: read the scale now,
				// without waiting for the back-off.
			}
		}
		s, err := p.o.Client.AppsV1().Deployments(key.Namespace).GetScale(ctx, key.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		from = s.Spec.Replicas
		if from == n {
			return nil
		}
		return p.updateScale(ctx, key, n, s.ResourceVersion)
	})
	if errors.Is(err, errFenced) {
		// Not this replica's to write (nor to record): its holder decides.
		return fmt.Errorf("scaling %s to %d: %w", key, n, err)
	}
	if err != nil {
		p.rec.Event(d, corev1.EventTypeWarning, reasonScaleFailed,
			truncate(fmt.Sprintf("scaling to %d failed after %d tries (the autoscaler retries with its next decision): %v", n, tries, err)))
		return fmt.Errorf("scaling %s to %d: %w", key, n, err)
	}
	if n == 0 {
		p.forgetPark(nsName(key)) // its pods go: nothing is parked (a refusal stays said)
	}
	if from == n {
		return nil
	}
	reason := why.Code
	if reason == "" {
		reason = "Scaled"
	}
	msg := fmt.Sprintf("scaled from %d to %d", from, n)
	if why.Message != "" {
		msg += ": " + why.Message
	}
	p.rec.Event(d, corev1.EventTypeNormal, reason, truncate(msg))
	p.log.Debug("scaled through the API", zap.String("deployment", key.String()), zap.Int32("from", from), zap.Int32("to", n),
		zap.String("reason", reason), zap.Int("tries", tries))
	return nil
}

// updateScale writes n replicas through the scale subresource on the
// Deployment's resourceVersion rv (a conflict if it changed since), once
// the fence says this replica still decides for the revision (checked
// again as the request is sent, with the fence's deadline). A decision
// thus costs one API call when the informer's copy is current (the
// replica count from the cache, the resourceVersion as precondition), and
// a read and a write when it is not.
func (p *Platform) updateScale(ctx context.Context, key autoscaler.RevisionKey, n int32, rv string) error {
	ctx, err := p.fenced(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Name})
	if err != nil {
		return err
	}
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, ResourceVersion: rv},
		Spec: autoscalingv1.ScaleSpec{Replicas: n}}
	_, err = p.o.Client.AppsV1().Deployments(key.Namespace).UpdateScale(ctx, key.Name, s, metav1.UpdateOptions{})
	return err
}

var _ autoscaler.Warner = (*Platform)(nil)

// Warn implements autoscaler.Warner: a Warning Event on the revision's
// Deployment (client-go's recorder folds repeats into a count), as
// Kubernetes' HPA controller records a metric it cannot read.
func (p *Platform) Warn(_ context.Context, key autoscaler.RevisionKey, reason, message string) {
	d, err := p.deployment(key) // only opted-in Deployments
	if err != nil {
		p.log.Debug("no Deployment to warn on", zap.String("deployment", key.String()), zap.Error(err))
		return
	}
	p.rec.Event(d, corev1.EventTypeWarning, reason, truncate(message))
}

// activatorRouted checks that the revision's Service points at one
// activator at least, as last written.
func (p *Platform) activatorRouted(key autoscaler.RevisionKey) error {
	st := p.state(nsName(key))
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.known || st.routed.To != RouteActivator || st.routedN == 0 {
		return fmt.Errorf("not scaling %s to zero: %w of Service %s yet", key, errActivatorNotInPath, publicServiceName(key.Name))
	}
	return nil
}

// retry runs f until it succeeds, fails for good, or the back-off is
// spent; it returns the number of tries.
func (p *Platform) retry(ctx context.Context, f func() error) (int, error) {
	b := p.o.ScaleBackoff
	delay := b.Duration
	for try := 1; ; try++ {
		err := f()
		if err == nil || !retriable(err) || try >= b.Steps {
			return try, err
		}
		p.log.Debug("scale call failed; retrying", zap.Int("try", try), zap.Duration("in", delay), zap.Error(err))
		select {
		case <-ctx.Done():
			return try, errors.Join(err, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(time.Duration(float64(delay)*b.Factor), b.Cap)
	}
}

// retriable: conflicts, throttling, timeouts, server and connection
// errors. Not: the object is gone, the request is invalid or forbidden.
func retriable(err error) bool {
	switch {
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err), apierrors.IsUnauthorized(err),
		apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsMethodNotSupported(err):
		return false
	case errors.Is(err, context.Canceled), errors.Is(err, errFenced):
		return false
	}
	return true
}
