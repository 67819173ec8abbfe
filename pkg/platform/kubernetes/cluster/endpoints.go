package cluster

import (
	"cmp"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Endpoint is one address behind a Service.
type Endpoint struct {
	IP  string
	Ref *corev1.ObjectReference // the pod, when known
}

// ActivatorEndpoints reads the activator Service's EndpointSlices: the
// ready, not terminating addresses (deduplicated, sorted as strings, the
// order in which Knative numbers its activators) and the port named
// PortName (else def).
func ActivatorEndpoints(sls []*discoveryv1.EndpointSlice, def int32) ([]Endpoint, int32) {
	port := def
	seen := map[string]Endpoint{}
	for _, sl := range sls {
		for _, p := range sl.Ports {
			if p.Port != nil && (p.Name == nil || *p.Name == PortName || *p.Name == "") {
				port = *p.Port
			}
		}
		for _, ep := range sl.Endpoints {
			if !EndpointServes(ep) {
				continue
			}
			for _, a := range ep.Addresses {
				seen[a] = Endpoint{IP: a, Ref: ep.TargetRef}
			}
		}
	}
	eps := slices.Collect(maps.Values(seen))
	SortEndpoints(eps)
	return eps, port
}

// SortEndpoints sorts by IP, as strings.
func SortEndpoints(eps []Endpoint) {
	slices.SortFunc(eps, func(a, b Endpoint) int { return cmp.Compare(a.IP, b.IP) })
}

// EndpointServes: ready (or not saying) and not terminating.
func EndpointServes(ep discoveryv1.Endpoint) bool {
	c := ep.Conditions
	return (c.Ready == nil || *c.Ready) && (c.Terminating == nil || !*c.Terminating)
}
