package reconciler

import (
	"context"
	"maps"

	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"ebb.dev/ebb/pkg/platform"
)

// reconcileDeployment keeps one Deployment's revision in step: the
// listener has its annotations (or has dropped it), and its Services exist.
func (p *Platform) reconcileDeployment(ctx context.Context, key types.NamespacedName) error {
	if !p.owns(key) {
		return nil // another replica's (Options.Buckets)
	}
	d, err := p.inf.deployments.Deployments(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		p.forget(key)
		if p.o.Removed != nil {
			p.o.Removed(revKey(key))
		}
		// Deleted: the garbage collector removes the Services (they are
		// owned). Still there without the label: Ebb lets go of them.
		return p.removeServices(ctx, key)
	}
	if err != nil {
		return err
	}
	if Sidecarless(d) {
		// No queue-proxy: the Service is the user's. Ebb lets go of any it
		// made while the pods had one.
		if err := p.removeServices(ctx, key); err != nil {
			return err
		}
	} else if err := p.ensureServices(ctx, d); err != nil {
		return err
	}
	p.feed(d)
	return nil
}

// feed gives the listener the Deployment's pod-template annotations when
// they changed and this replica decides for it (Options.Buckets).
func (p *Platform) feed(d *appsv1.Deployment) {
	key := types.NamespacedName{Namespace: d.Namespace, Name: d.Name}
	b := p.bucketOf(key)
	if b < 0 {
		p.feedLocked(d)
		return
	}
	o := &p.own[b]
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.held {
		p.feedLocked(d)
	}
}

// feedLocked feeds the Deployment; its bucket's lock is held (when
// there are buckets). A rejection is reported once per change, as a
// Warning Event on the Deployment and a log line; the autoscaler keeps
// the last good configuration.
func (p *Platform) feedLocked(d *appsv1.Deployment) {
	key := types.NamespacedName{Namespace: d.Namespace, Name: d.Name}
	ann := maps.Clone(d.Spec.Template.Annotations)
	if ann == nil {
		ann = map[string]string{}
	}
	p.mu.Lock()
	prev, had := p.fed[key]
	p.mu.Unlock()
	if had && maps.Equal(prev.annotations, ann) {
		return
	}
	var err error
	if p.o.Listener != nil {
		err = p.o.Listener.Upsert(revKey(key), ann)
		if l, ok := p.o.Listener.(platform.Labeler); ok && err == nil {
			l.SetLabels(revKey(key), d.Spec.Template.Labels)
		}
	}
	p.mu.Lock()
	p.fed[key] = fedState{annotations: ann, rejected: err != nil}
	p.mu.Unlock()
	switch {
	case err != nil:
		p.log.Warn("annotations rejected; the last good configuration stays", zap.String("deployment", key.String()), zap.Error(err))
		p.rec.Event(d, corev1.EventTypeWarning, ReasonAnnotationsRejected, truncate(err.Error()))
	case had:
		p.log.Info("annotations applied", zap.String("deployment", key.String()))
		p.rec.Event(d, corev1.EventTypeNormal, reasonAnnotationsApplied, "the autoscaler applied the pod template's annotations")
	default:
		p.log.Info("revision added", zap.String("deployment", key.String()))
	}
}

// forget drops a revision that is gone or opted out.
func (p *Platform) forget(key types.NamespacedName) {
	p.mu.Lock()
	_, had := p.fed[key]
	delete(p.fed, key)
	delete(p.revs, key)
	p.setStart(key, nil)
	p.forgetSidecars(key)
	p.mu.Unlock()
	if had {
		p.log.Info("revision removed", zap.String("deployment", key.String()))
		if p.o.Listener != nil {
			p.o.Listener.Delete(revKey(key))
		}
	}
}

// applyConfig gives the listener config-autoscaler when its data changed.
// A rejected ConfigMap is reported once per change (a Warning Event on the
// ConfigMap and a log line) and the last good configuration stays, as it
// does when the ConfigMap is deleted.
func (p *Platform) applyConfig() {
	cm, err := p.inf.configMaps.Get(p.o.ConfigMapName)
	if err != nil {
		p.mu.Lock()
		seen := p.cfgSeen
		p.mu.Unlock()
		if seen {
			p.log.Warn("config-autoscaler is gone; the last configuration stays", zap.String("namespace", p.o.Namespace))
		} else {
			p.log.Info("no config-autoscaler; Knative's defaults apply", zap.String("namespace", p.o.Namespace))
		}
		return
	}
	data := maps.Clone(cm.Data)
	if data == nil {
		data = map[string]string{}
	}
	p.mu.Lock()
	same := p.cfgSeen && maps.Equal(p.lastCfg, data)
	p.lastCfg, p.cfgSeen = data, true
	p.mu.Unlock()
	if same || p.o.Listener == nil {
		return
	}
	events := p.o.ConfigEvents == nil || p.o.ConfigEvents()
	if err := p.o.Listener.SetConfig(data); err != nil {
		p.log.Warn("config-autoscaler rejected", zap.String("configmap", p.o.Namespace+"/"+p.o.ConfigMapName), zap.Error(err))
		if events {
			p.rec.Event(cm, corev1.EventTypeWarning, ReasonConfigRejected, truncate(err.Error()))
		}
	} else {
		p.log.Info("config-autoscaler applied", zap.String("configmap", p.o.Namespace+"/"+p.o.ConfigMapName))
		if events {
			p.rec.Event(cm, corev1.EventTypeNormal, reasonConfigApplied, "the autoscaler applied config-autoscaler")
		}
	}
	p.refeedRejected()
}

// refeedRejected offers the rejected revisions again: a new ConfigMap may
// make their annotations valid.
func (p *Platform) refeedRejected() {
	p.mu.Lock()
	var keys []types.NamespacedName
	for k, f := range p.fed {
		if f.rejected {
			keys = append(keys, k)
			delete(p.fed, k)
		}
	}
	p.mu.Unlock()
	for _, k := range keys {
		p.deps.Add(k)
	}
}
