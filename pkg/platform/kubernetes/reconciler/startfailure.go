package reconciler

import (
	"time"

	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
	"ebb.dev/ebb/pkg/podfailure"
)

// startState is what the platform last said of a revision whose pods
// cannot start.
type startState struct {
	f          podfailure.Failure
	generation int64 // the Deployment's when the failure was last seen
}

// sameFailure: the same reason in the same container (the kubelet's
// cause alternates, ErrImagePull and ImagePullBackOff, and each new pod
// has its own name: neither is news).
func sameFailure(a, b podfailure.Failure) bool {
	return a.Reason == b.Reason && a.Container == b.Container
}

// checkStart follows whether the revision's pods can start
// (cluster.StartFailure), on every change of its pods or Deployment. A
// new failure is a Warning Event on the Deployment (reason: the
// failure's, message: what, why and the fix) and shows in its
// RevisionAutoscaler's status (Failure); it stays until a pod is ready
// (a Normal Event PodsReady then says so; after a crash after start, a
// pod of a new template, or one ready for RecoverSettle: a replica ready
// for a moment between two crashes is no recovery) or the pod template
// changes, so that a revision scaled to zero after failing still says why.
func (p *Platform) checkStart(d *appsv1.Deployment) {
	key := types.NamespacedName{Namespace: d.Namespace, Name: d.Name}
	pods := p.inf.podsOf(d)
	p.mu.Lock()
	prev, had := p.starts[key]
	p.mu.Unlock()
	var after *podfailure.Failure
	if had {
		after = &prev.f
	}
	// After the last failure: a crash loop that served stays named so
	// (podfailure.Classify), whatever the Deployment's generation (a
	// scale changes it).
	f, failing := cluster.StartFailure(after, d, pods)
	if !failing {
		// A node that does not start the pods (its kubelet silent) sends no
		// news: look again when a waiting pod reaches the bound.
		var recheck time.Duration
		if f, failing, recheck = cluster.StalledStart(pods, p.o.Now(), p.o.StartStall); recheck > 0 {
			p.routes.AddAfter(key, recheck)
		}
	}
	ready := false
	if had && !failing {
		// A replica ready for a moment between two crashes is no recovery.
		var recheck time.Duration
		if ready, recheck = cluster.Recovered(pods, prev.f, p.o.Now(), p.o.RecoverSettle); recheck > 0 {
			p.routes.AddAfter(key, recheck)
		}
	}
	p.mu.Lock()
	prev, had = p.starts[key]
	var event func()
	switch {
	case failing:
		p.setStart(key, &startState{f: f, generation: d.Generation})
		if !had || !sameFailure(prev.f, f) {
			event = func() {
				p.log.Warn("revision's pods are failing", zap.String("deployment", key.String()), zap.String("reason", f.Reason),
					zap.String("cause", f.Cause), zap.String("message", f.Message))
				// "pods cannot start yet" while waiting for a node (until the
				// progress deadline); "pods keep failing" after serving.
				p.rec.Event(d, corev1.EventTypeWarning, f.Reason, truncate(f.Summary()+": "+f.Message))
			}
		}
	case had && ready:
		p.setStart(key, nil)
		event = func() {
			p.log.Info("revision's pods start again", zap.String("deployment", key.String()))
			p.rec.Event(d, corev1.EventTypeNormal, reasonPodsReady, "a pod is ready: the revision starts again (it could not: "+prev.f.Reason+")")
		}
	case had && prev.generation != d.Generation:
		p.setStart(key, nil) // a new pod template: the old failure says nothing of it
	}
	p.mu.Unlock()
	if event != nil {
		event()
	}
}

// setStart replaces a revision's entry (nil: removes it) and publishes a
// new snapshot for Failure. p.mu is held.
func (p *Platform) setStart(key types.NamespacedName, s *startState) {
	if s == nil {
		if _, ok := p.starts[key]; !ok {
			return
		}
		delete(p.starts, key)
	} else {
		p.starts[key] = *s
	}
	snap := make(map[types.NamespacedName]podfailure.Failure, len(p.starts))
	for k, st := range p.starts {
		snap[k] = st.f
	}
	p.failures.Store(&snap)
}

// Failure says whether the revision's pods cannot start, and why (its
// RevisionAutoscaler's status shows it): from the snapshot of the last
// checks, without a lock.
func (p *Platform) Failure(key autoscaler.RevisionKey) (podfailure.Failure, bool) {
	snap := p.failures.Load()
	if snap == nil {
		return podfailure.Failure{}, false
	}
	f, ok := (*snap)[nsName(key)]
	return f, ok
}

var _ autoscaler.StartFailureReporter = (*Platform)(nil)
