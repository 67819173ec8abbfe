package reconciler

import (
	"context"
	"fmt"
	"maps"

	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// publicService is the Service clients call: no selector, its one
// EndpointSlice is written by the platform (routing.go).
func (p *Platform) publicService(d *appsv1.Deployment) *corev1.Service {
	s := p.ownedService(d, publicServiceName(d.Name))
	s.Spec.Ports = []corev1.ServicePort{{Name: portName, Protocol: corev1.ProtocolTCP, Port: 80,
		TargetPort: intstr.FromInt32(p.o.QueueServingPort)}}
	return s
}

// privateService selects the revision's pods (Kubernetes writes its
// EndpointSlices): their queue-proxies' serving and admin ports. Only a
// selector of matchLabels can be a Service's selector; nil otherwise.
func (p *Platform) privateService(d *appsv1.Deployment) *corev1.Service {
	sel := d.Spec.Selector
	if sel == nil || len(sel.MatchExpressions) > 0 || len(sel.MatchLabels) == 0 {
		return nil
	}
	s := p.ownedService(d, privateServiceName(d.Name))
	s.Spec.Selector = maps.Clone(sel.MatchLabels)
	s.Spec.Ports = []corev1.ServicePort{
		{Name: portName, Protocol: corev1.ProtocolTCP, Port: p.o.QueueServingPort, TargetPort: intstr.FromInt32(p.o.QueueServingPort)},
		{Name: adminPortName, Protocol: corev1.ProtocolTCP, Port: p.o.QueueAdminPort, TargetPort: intstr.FromInt32(p.o.QueueAdminPort)},
	}
	return s
}

func (p *Platform) ownedService(d *appsv1.Deployment, name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.Namespace,
			Labels:          map[string]string{managedByLabel: managedBy, revisionLabel: d.Name},
			OwnerReferences: []metav1.OwnerReference{ownerRef(d)}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP},
	}
}

// ensureServices creates or corrects the revision's two Services. A
// Service of that name that is not Ebb's is left alone and reported.
func (p *Platform) ensureServices(ctx context.Context, d *appsv1.Deployment) error {
	ctx, err := p.fenced(ctx, types.NamespacedName{Namespace: d.Namespace, Name: d.Name})
	if err != nil {
		return err
	}
	for _, want := range []*corev1.Service{p.publicService(d), p.privateService(d)} {
		if want == nil {
			continue
		}
		if err := p.ensureService(ctx, d, want); err != nil {
			return err
		}
	}
	return nil
}

func (p *Platform) ensureService(ctx context.Context, d *appsv1.Deployment, want *corev1.Service) error {
	svcs := p.o.Client.CoreV1().Services(want.Namespace)
	have, err := p.inf.services.Services(want.Namespace).Get(want.Name)
	if apierrors.IsNotFound(err) {
		_, err = svcs.Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return p.serviceConflict(ctx, d, want.Name)
		}
		if err == nil {
			p.log.Info("service created", zap.String("service", want.Namespace+"/"+want.Name))
		}
		return err
	}
	if err != nil {
		return err
	}
	if serviceMatches(have, want) {
		return nil
	}
	upd := have.DeepCopy()
	upd.Labels = mergeLabels(upd.Labels, want.Labels)
	upd.OwnerReferences = want.OwnerReferences
	upd.Spec.Selector, upd.Spec.Ports = want.Spec.Selector, want.Spec.Ports
	_, err = svcs.Update(ctx, upd, metav1.UpdateOptions{})
	return err
}

// serviceConflict reports a Service of the revision's name that Ebb does
// not own (a user's). Routing stays off for the revision until it is
// removed; the error makes the reconcile retry with back-off.
func (p *Platform) serviceConflict(ctx context.Context, d *appsv1.Deployment, name string) error {
	s, err := p.o.Client.CoreV1().Services(d.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if s.Labels[managedByLabel] == managedBy {
		return fmt.Errorf("service %s/%s: not in the cache yet", d.Namespace, name)
	}
	msg := fmt.Sprintf(
		"Service %s exists and is not Ebb's (no label %s=%s): Ebb routes a revision through its own Service of the Deployment's name; rename or delete that Service",
		name,
		managedByLabel,
		managedBy,
	)
	p.rec.Event(d, corev1.EventTypeWarning, reasonServiceConflict, msg)
	return fmt.Errorf("%s", msg)
}

// removeServices deletes the Services and the EndpointSlice of a revision
// that left Ebb while its Deployment stays. The deletions are writes for
// the revision: fenced by its bucket, like the writes that made them.
func (p *Platform) removeServices(ctx context.Context, key types.NamespacedName) error {
	sel := labels.SelectorFromSet(labels.Set{revisionLabel: key.Name})
	svcs, _ := p.inf.services.Services(key.Namespace).List(sel) // a lister never fails
	sls, _ := p.inf.slices.EndpointSlices(key.Namespace).List(sel)
	if len(svcs) == 0 && len(sls) == 0 {
		return nil
	}
	ctx, err := p.fenced(ctx, key)
	if err != nil {
		return err
	}
	for _, s := range svcs {
		err := p.o.Client.CoreV1().Services(key.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
	}
	for _, s := range sls {
		err := p.o.Client.DiscoveryV1().EndpointSlices(key.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
	}
	return nil
}

func serviceMatches(have, want *corev1.Service) bool {
	if !maps.Equal(have.Spec.Selector, want.Spec.Selector) || len(have.Spec.Ports) != len(want.Spec.Ports) ||
		!ownedBy(have.OwnerReferences, want.OwnerReferences[0].UID) {
		return false
	}
	for k, v := range want.Labels {
		if have.Labels[k] != v {
			return false
		}
	}
	for i, w := range want.Spec.Ports {
		h := have.Spec.Ports[i]
		if h.Name != w.Name || h.Port != w.Port || h.TargetPort != w.TargetPort || h.Protocol != w.Protocol {
			return false
		}
	}
	return true
}

func mergeLabels(have, want map[string]string) map[string]string {
	out := maps.Clone(have)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, want)
	return out
}
