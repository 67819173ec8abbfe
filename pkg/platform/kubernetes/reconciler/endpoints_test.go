package reconciler

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestChooseRoute(t *testing.T) {
	for _, tc := range []struct {
		name             string
		want             bool
		activators, pods int
		route            route
	}{
		{"activator asked", true, 2, 3, route{To: RouteActivator}},
		{"activator asked, none ready: the pods", true, 0, 3, route{To: RoutePods, Forced: "no activator is ready"}},
		{"activator asked, nothing ready", true, 0, 0, route{To: RouteActivator}},
		{"pods asked", false, 2, 1, route{To: RoutePods}},
		{"pods asked, none answering: the activator", false, 2, 0, route{To: RouteActivator, Forced: "no ready pod has answered its probe yet"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.route, chooseRoute(tc.want, tc.activators, tc.pods), cmp.AllowUnexported(route{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadyEndpointsSkipUnreadyAndTerminating(t *testing.T) {
	now := metav1.Now()
	pod := func(name, ip string, phase corev1.PodPhase, ready bool, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "uid-" + "name"},
			Status: corev1.PodStatus{Phase: phase, PodIP: ip}}
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
		if deleting {
			p.DeletionTimestamp = &now
		}
		return p
	}
	got := readyEndpoints([]*corev1.Pod{
		pod("b", "10.0.0.2", corev1.PodRunning, true, false),
		pod("a", "10.0.0.1", corev1.PodRunning, true, false),
		pod("c", "10.0.0.3", corev1.PodRunning, false, false),
		pod("d", "10.0.0.4", corev1.PodRunning, true, true),
		pod("e", "", corev1.PodRunning, true, false),
		pod("f", "10.0.0.6", corev1.PodPending, true, false),
	})
	var ips []string
	for _, e := range got {
		ips = append(ips, e.IP)
	}
	if diff := cmp.Diff([]string{"10.0.0.1", "10.0.0.2"}, ips); diff != "" {
		t.Errorf("ready endpoints (-want +got):\n%s", diff)
	}
}

func TestPublicSliceMatches(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default", UID: "d-1"}}
	a := publicSlice(d, RouteActivator, []endpoint{{IP: "10.0.0.1"}, {IP: "10.0.0.2"}}, 8012)
	if a.Name != "hello-ebb" || a.Labels[discoveryv1.LabelServiceName] != "hello" || a.Labels[RouteLabel] != RouteActivator ||
		a.Labels[discoveryv1.LabelManagedBy] != endpointSliceManager || len(a.Endpoints) != 2 || a.AddressType != discoveryv1.AddressTypeIPv4 {
		t.Fatalf("slice %+v: want hello-ebb for Service hello, managed by Ebb, two IPv4 endpoints", a)
	}
	if !sliceMatches(a.DeepCopy(), a) {
		t.Error("a slice does not match its copy")
	}
	p := publicSlice(d, RoutePods, []endpoint{{IP: "10.0.0.1"}, {IP: "10.0.0.2"}}, 8012)
	if sliceMatches(a, p) {
		t.Error("the activator's slice matches the pods' (same addresses, other route label)")
	}
	other := publicSlice(d, RouteActivator, []endpoint{{IP: "10.0.0.1"}}, 8012)
	if sliceMatches(a, other) {
		t.Error("slices of different addresses match")
	}
	v6 := publicSlice(d, RoutePods, []endpoint{{IP: "fd00::1"}, {IP: "10.0.0.1"}}, 8012)
	if v6.AddressType != discoveryv1.AddressTypeIPv6 || len(v6.Endpoints) != 1 {
		t.Errorf("slice %+v: want one IPv6 endpoint (the first address's family)", v6)
	}
}
