package reconciler

import (
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
)

// endpoint is one address behind a public Service.
type endpoint = cluster.Endpoint

// readyEndpoints are the ready pods' addresses, sorted by IP.
func readyEndpoints(pods []*corev1.Pod) []endpoint {
	var eps []endpoint
	for _, p := range pods {
		if cluster.PodReady(p) {
			eps = append(eps, endpoint{IP: p.Status.PodIP, Ref: podRef(p)})
		}
	}
	cluster.SortEndpoints(eps)
	return eps
}

func podRef(p *corev1.Pod) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID}
}

// route is where a revision's public Service points, and why.
type route struct {
	To     string // RouteActivator or RoutePods
	Forced string // why it differs from what the autoscaler asked; empty if it does not
}

// chooseRoute applies the rules of Knative's ServerlessService: the
// activator when asked, unless no activator is ready (then the pods); the
// pods when asked, unless none is ready and answered its probe (then the
// activator, so no request goes to nowhere).
func chooseRoute(wantActivator bool, activators, pods int) route {
	switch {
	case wantActivator && activators == 0 && pods > 0:
		return route{To: RoutePods, Forced: "no activator is ready"}
	case wantActivator:
		return route{To: RouteActivator}
	case pods == 0:
		return route{To: RouteActivator, Forced: "no ready pod has answered its probe yet"}
	}
	return route{To: RoutePods}
}

// publicSlice is the desired EndpointSlice of a revision's public Service.
// Every address has the family of the first one (a single-stack cluster).
func publicSlice(dep *appsv1.Deployment, to string, eps []endpoint, port int32) *discoveryv1.EndpointSlice {
	family := discoveryv1.AddressTypeIPv4
	if len(eps) > 0 && strings.Contains(eps[0].IP, ":") {
		family = discoveryv1.AddressTypeIPv6
	}
	ready := true
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: PublicSliceName(dep.Name), Namespace: dep.Namespace,
			Labels: map[string]string{
				discoveryv1.LabelServiceName: publicServiceName(dep.Name),
				discoveryv1.LabelManagedBy:   endpointSliceManager,
				managedByLabel:               managedBy,
				revisionLabel:                dep.Name,
				RouteLabel:                   to,
			},
			OwnerReferences: []metav1.OwnerReference{ownerRef(dep)},
		},
		AddressType: family,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr(portName), Port: ptr(port), Protocol: ptr(corev1.ProtocolTCP)}},
	}
	for _, ep := range eps {
		if strings.Contains(ep.IP, ":") != (family == discoveryv1.AddressTypeIPv6) {
			continue
		}
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{ep.IP},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(ready)}, TargetRef: ep.Ref})
	}
	return sl
}

// sliceMatches reports whether have already says what want says (labels,
// owner, addresses, ports); then nothing is written.
func sliceMatches(have, want *discoveryv1.EndpointSlice) bool {
	for k, v := range want.Labels {
		if have.Labels[k] != v {
			return false
		}
	}
	if have.AddressType != want.AddressType || !ownedBy(have.OwnerReferences, want.OwnerReferences[0].UID) ||
		len(have.Ports) != len(want.Ports) || len(have.Endpoints) != len(want.Endpoints) {
		return false
	}
	for i := range want.Ports {
		if deref(have.Ports[i].Port) != deref(want.Ports[i].Port) || deref(have.Ports[i].Name) != deref(want.Ports[i].Name) {
			return false
		}
	}
	for i := range want.Endpoints {
		h, w := have.Endpoints[i], want.Endpoints[i]
		if !slices.Equal(h.Addresses, w.Addresses) || !cluster.EndpointServes(h) {
			return false
		}
	}
	return true
}

func ownerRef(dep *appsv1.Deployment) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: dep.Name, UID: dep.UID}
}

func ownedBy(refs []metav1.OwnerReference, uid types.UID) bool {
	for _, r := range refs {
		if r.UID == uid {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
