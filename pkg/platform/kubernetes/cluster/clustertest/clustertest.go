// Package clustertest builds the Kubernetes objects the platform's tests
// feed to fake clients: an opted-in Deployment, a ready pod, the
// activator Service's EndpointSlice; and waits for what they do. Tests only.
package clustertest

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
)

// Deployment is an opted-in Deployment in "default" selecting app=name,
// its pods an app and Ebb's queue-proxy sidecar.
func Deployment(name string, replicas int32, ann map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: map[string]string{config.LabelEnabled: "true"}},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}, Annotations: ann},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}, {Name: "queue-proxy"}}}}},
	}
}

// ReadyPod is a Running, Ready pod of app in "default".
func ReadyPod(app, name, ip string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: map[string]string{"app": app}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
}

// ActivatorSlice is an EndpointSlice of the activator's Service in Ebb's
// namespace with the given addresses, on the port http.
func ActivatorSlice(ips ...string) *discoveryv1.EndpointSlice {
	name, port := cluster.PortName, int32(config.ActivatorPort)
	sl := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: config.ActivatorName + "-x", Namespace: config.SystemNamespace,
		Labels: map[string]string{discoveryv1.LabelServiceName: config.ActivatorName}}, AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{{Name: &name, Port: &port}}}
	for _, ip := range ips {
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}})
	}
	return sl
}

// Eventually polls cond every 10ms and fails the test when it does not
// hold within 5s (informers and elections answer within milliseconds
// here; the bound is for a busy machine).
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("not within 5s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Optimistic gives a fake clientset the API server's optimistic
// concurrency for one resource (the fake's tracker has none): each create
// and update sets a new resourceVersion, and an update whose
// resourceVersion is not the stored one fails with a conflict. Two
// replicas that race for one Lease then see one win, as on a cluster.
func Optimistic(c *fake.Clientset, resource string) {
	var rv atomic.Int64
	c.PrependReactor("create", resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
		if obj, ok := a.(k8stesting.CreateAction).GetObject().(metav1.Object); ok {
			obj.SetResourceVersion(strconv.FormatInt(rv.Add(1), 10))
		}
		return false, nil, nil
	})
	c.PrependReactor("update", resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj, ok := a.(k8stesting.UpdateAction).GetObject().(metav1.Object)
		if !ok {
			return false, nil, nil
		}
		cur, err := c.Tracker().Get(a.GetResource(), a.GetNamespace(), obj.GetName())
		if m, ok := cur.(metav1.Object); err == nil && ok && m.GetResourceVersion() != obj.GetResourceVersion() {
			return true, nil, apierrors.NewConflict(a.GetResource().GroupResource(), obj.GetName(),
				fmt.Errorf("resourceVersion %q is not the stored %q", obj.GetResourceVersion(), m.GetResourceVersion()))
		}
		obj.SetResourceVersion(strconv.FormatInt(rv.Add(1), 10))
		return false, nil, nil
	})
}
