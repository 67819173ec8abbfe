package cluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	discoveryv1 "k8s.io/api/discovery/v1"
)

func TestActivatorEndpoints(t *testing.T) {
	no, yes, http := false, true, PortName
	sl := func(port int32, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{Ports: []discoveryv1.EndpointPort{{Name: &http, Port: &port}}, Endpoints: eps}
	}
	ep := func(ip string, ready, terminating *bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ready, Terminating: terminating}}
	}
	eps, port := ActivatorEndpoints([]*discoveryv1.EndpointSlice{
		sl(8013, ep("10.0.0.3", &yes, nil), ep("10.0.0.1", nil, nil), ep("10.0.0.2", &no, nil)),
		sl(8013, ep("10.0.0.4", &yes, &yes), ep("10.0.0.1", &yes, nil)),
	}, 8012)
	var ips []string
	for _, e := range eps {
		ips = append(ips, e.IP)
	}
	if diff := cmp.Diff([]string{"10.0.0.1", "10.0.0.3"}, ips); diff != "" || port != 8013 {
		t.Errorf("port %d, addresses (-want +got):\n%s", port, diff)
	}
	if _, port := ActivatorEndpoints(nil, 8012); port != 8012 {
		t.Errorf("port %d without slices, want the default 8012", port)
	}
}
