//go:build k8s

package k8s

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ebb.dev/ebb/pkg/config"
	kplat "ebb.dev/ebb/pkg/platform/kubernetes/reconciler"
)

// TestOptInAndAnnotations: a labelled Deployment becomes a revision with
// its two Services and its EndpointSlice on the activators; one without
// the label is left alone; an invalid annotation is reported as a Warning
// Event naming the key and the value and is not applied; a fix is.
func TestOptInAndAnnotations(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "optin")
	plain := appDeployment(t, ns, "plain", nil)
	delete(plain.Labels, config.LabelEnabled)
	createApp(t, plain)
	createApp(t, appDeployment(t, ns, "hello", map[string]string{"autoscaling.knative.dev/initial-scale": "0"}))

	svcs := env.client.CoreV1().Services(ns)
	waitFor(t, 30*time.Second, "Services hello and hello-private", func() (bool, string) {
		pub, err1 := svcs.Get(ctx, "hello", metav1.GetOptions{})
		priv, err2 := svcs.Get(ctx, "hello-private", metav1.GetOptions{})
		if err1 != nil || err2 != nil {
			return false, fmt.Sprintf("%v; %v", err1, err2)
		}
		return len(pub.Spec.Selector) == 0 && priv.Spec.Selector["app"] == "hello" &&
			ownedByDeployment(pub, "hello") && ownedByDeployment(priv, "hello"), fmt.Sprintf("public %+v, private %+v", pub.Spec, priv.Spec)
	})
	acts, _ := serviceAddrs(ctx, env.client, ebbNS, activatorName)
	waitFor(t, 10*time.Second, "EndpointSlice hello-ebb on the activators", func() (bool, string) {
		to, addrs := route(ctx, ns, "hello")
		return to == kplat.RouteActivator && len(addrs) == activators, fmt.Sprintf("route %s %v (activators %v)", to, addrs, acts)
	})
	waitFor(t, 10*time.Second, "revision autoscaled with target 10", func() (bool, string) {
		s, ok, state := status(ctx, ns, "hello")
		return ok && s.Target == 10, state
	})

	// Not opted in: nothing of Ebb's, and never scaled.
	if _, err := svcs.Get(ctx, "plain", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Service plain of a Deployment without the label: %v, want none", err)
	}
	if _, ok, _ := status(ctx, ns, "plain"); ok {
		t.Error("the Deployment without the label is autoscaled")
	}
	if n, _ := replicas(ctx, ns, "plain"); n != 0 {
		t.Errorf("Deployment plain has %d replicas, want its own 0", n)
	}

	// An invalid annotation: reported, not applied.
	updateAnnotations(t, ns, "hello", map[string]string{"autoscaling.knative.dev/target": "ten"})
	waitFor(t, 15*time.Second, "a Warning Event naming the key and the value", func() (bool, string) {
		e, seen := findEvent(ctx, ns, "Deployment", "hello", corev1.EventTypeWarning, kplat.ReasonAnnotationsRejected,
			"autoscaling.knative.dev/target", `"ten"`)
		return e != nil, seen
	})
	if s, _, state := status(ctx, ns, "hello"); s.Target != 10 {
		t.Errorf("after a rejected annotation the target is %v, want the last good 10 (%s)", s.Target, state)
	}
	updateAnnotations(t, ns, "hello", map[string]string{"autoscaling.knative.dev/target": "20"})
	waitFor(t, 15*time.Second, "the fixed annotation applied", func() (bool, string) {
		s, ok, state := status(ctx, ns, "hello")
		return ok && s.Target == 20, state
	})
}

func ownedByDeployment(s *corev1.Service, name string) bool {
	return slices.ContainsFunc(s.OwnerReferences, func(r metav1.OwnerReference) bool {
		return r.Kind == "Deployment" && r.Name == name
	})
}
