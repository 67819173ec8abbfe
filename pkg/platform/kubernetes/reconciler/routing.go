package reconciler

import (
	"context"
	"fmt"

	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
)

// ReadyPods implements autoscaler.Platform: the revision's pods that are
// Running and Ready and not terminating, scraped on their queue-proxy's
// admin port.
func (p *Platform) ReadyPods(_ context.Context, key autoscaler.RevisionKey) ([]autoscaler.Pod, error) {
	d, err := p.deployment(key)
	if err != nil {
		return nil, err
	}
	var pods []autoscaler.Pod
	for _, pod := range p.inf.podsOf(d) {
		if !cluster.PodReady(pod) {
			continue
		}
		ap := autoscaler.Pod{Name: pod.Name, StatsAddr: cluster.HostPort(pod.Status.PodIP, p.o.QueueAdminPort)}
		if pod.Status.StartTime != nil {
			ap.Started = pod.Status.StartTime.Time
		}
		pods = append(pods, ap)
	}
	return pods, nil
}

// SetActivatorInPath implements autoscaler.Platform: it points the
// revision's Service at the activators (true) or at its ready pods
// (false), and returns once the EndpointSlice says so. Asked for the pods
// while none is ready and answering, it keeps the activator and switches
// as soon as one is (the route reconciler watches the pods).
func (p *Platform) SetActivatorInPath(ctx context.Context, key autoscaler.RevisionKey, in bool) error {
	d, err := p.deployment(key)
	if err != nil {
		return err
	}
	if Sidecarless(d) {
		return nil // no route of Ebb's: requests go through the user's Service
	}
	st := p.state(nsName(key))
	st.mu.Lock()
	defer st.mu.Unlock()
	st.wantActivator, st.asked = in, true
	return p.routeLocked(ctx, d, st)
}

// reconcileRoute is the route worker's reconcile: pods, activators or the
// slice changed. It also follows whether the revision's pods can start
// (checkStart), sidecarless or not, and whether any runs without the
// queue-proxy it opted in to (checkSidecars).
func (p *Platform) reconcileRoute(ctx context.Context, key types.NamespacedName) error {
	if !p.owns(key) {
		return nil // another replica's (Options.Buckets)
	}
	d, err := p.inf.deployments.Deployments(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	p.checkStart(d)
	p.checkSidecars(d, p.inf.podsOf(d))
	if Sidecarless(d) {
		return nil // the user's Service routes: nothing of Ebb's to write
	}
	st := p.state(key)
	st.mu.Lock()
	defer st.mu.Unlock()
	return p.routeLocked(ctx, d, st)
}

// routeLocked writes the public EndpointSlice from the wish and the
// current pods and activators. st.mu is held.
func (p *Platform) routeLocked(ctx context.Context, d *appsv1.Deployment, st *revState) error {
	if _, err := p.inf.services.Services(d.Namespace).Get(publicServiceName(d.Name)); err != nil {
		return fmt.Errorf("revision %s/%s: its Service %s is not Ebb's yet (see the Deployment's Events): %w",
			d.Namespace, d.Name, publicServiceName(d.Name), err)
	}
	if !st.asked && !st.known {
		st.wantActivator = p.currentRoute(d) != RoutePods // a new leader keeps what the last one set
	}
	actSlices, _ := p.inf.activators.List(labels.Everything()) // a lister never fails
	acts, actPort := cluster.ActivatorEndpoints(actSlices, p.o.ActivatorPort)
	ready := readyEndpoints(p.inf.podsOf(d))
	var pods []endpoint
	if !st.wantActivator || len(acts) == 0 {
		pods = p.answered(ctx, ready)
	}
	r := chooseRoute(st.wantActivator, len(acts), len(pods))
	eps, port := acts, actPort
	if r.To == RoutePods {
		eps, port = pods, p.o.QueueServingPort
	}
	want := publicSlice(d, r.To, eps, port)
	ctx, err := p.fenced(ctx, types.NamespacedName{Namespace: d.Namespace, Name: d.Name})
	if err != nil {
		return err
	}
	if err := p.writeSlice(ctx, st, want); err != nil {
		return err
	}
	changed := !st.known || st.routed != r || st.routedN != len(want.Endpoints)
	moved := !st.known || st.routed.To != r.To
	st.routed, st.routedN, st.known = r, len(want.Endpoints), true
	if moved {
		p.routeEvent(d, r, len(want.Endpoints))
	} else if changed {
		p.log.Debug("route endpoints changed", zap.String("deployment", d.Namespace+"/"+d.Name),
			zap.String("to", r.To), zap.Int("endpoints", len(want.Endpoints)))
	}
	if len(pods) < len(ready) && (!st.wantActivator || len(acts) == 0) {
		p.routes.AddAfter(types.NamespacedName{Namespace: d.Namespace, Name: d.Name}, p.o.ProbeRetry)
	}
	return nil
}

func (p *Platform) routeEvent(d *appsv1.Deployment, r route, n int) {
	msg := fmt.Sprintf("Service %s now points at %d ready pods (activator out of the path)", publicServiceName(d.Name), n)
	if r.To == RouteActivator {
		msg = fmt.Sprintf("Service %s now points at %d activators (activator in the path)", publicServiceName(d.Name), n)
	}
	if r.Forced != "" {
		msg += ": " + r.Forced
	}
	p.log.Info("route changed", zap.String("deployment", d.Namespace+"/"+d.Name), zap.String("to", r.To),
		zap.Int("endpoints", n), zap.String("forced", r.Forced))
	p.rec.Event(d, corev1.EventTypeNormal, reasonRouteChanged, msg)
}

// currentRoute is what the public slice says now, from the cache.
func (p *Platform) currentRoute(d *appsv1.Deployment) string {
	sl, err := p.inf.slices.EndpointSlices(d.Namespace).Get(PublicSliceName(d.Name))
	if err != nil {
		return ""
	}
	return sl.Labels[RouteLabel]
}

// writeSlice makes the public slice say what want says. The cached slice
// is used when it is the one last written; otherwise it is read from the
// API, so an older cache never hides a difference.
func (p *Platform) writeSlice(ctx context.Context, st *revState, want *discoveryv1.EndpointSlice) error {
	cl := p.o.Client.DiscoveryV1().EndpointSlices(want.Namespace)
	have, err := p.inf.slices.EndpointSlices(want.Namespace).Get(want.Name)
	if err != nil || have.ResourceVersion != st.sliceRV {
		have, err = cl.Get(ctx, want.Name, metav1.GetOptions{})
	}
	switch {
	case apierrors.IsNotFound(err):
		created, err := cl.Create(ctx, want, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating EndpointSlice %s/%s: %w", want.Namespace, want.Name, err)
		}
		st.sliceRV = created.ResourceVersion
		return nil
	case err != nil:
		return fmt.Errorf("reading EndpointSlice %s/%s: %w", want.Namespace, want.Name, err)
	case sliceMatches(have, want):
		st.sliceRV = have.ResourceVersion
		return nil
	case have.AddressType != want.AddressType: // immutable
		if err := cl.Delete(ctx, want.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("replacing EndpointSlice %s/%s: %w", want.Namespace, want.Name, err)
		}
		st.sliceRV = ""
		return p.writeSlice(ctx, st, want)
	}
	upd := have.DeepCopy()
	upd.Labels = mergeLabels(upd.Labels, want.Labels)
	upd.OwnerReferences, upd.Ports, upd.Endpoints = want.OwnerReferences, want.Ports, want.Endpoints
	written, err := cl.Update(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("updating EndpointSlice %s/%s: %w", want.Namespace, want.Name, err)
	}
	st.sliceRV = written.ResourceVersion
	return nil
}
