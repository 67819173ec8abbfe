//go:build k8s

package k8s

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	kplat "ebb.dev/ebb/pkg/platform/kubernetes/reconciler"
)

// TestConfigMapReloadAndRejection: a change of config-autoscaler reaches
// running revisions; an invalid one is reported as a Warning Event on the
// ConfigMap naming the key and the value, and the last good configuration
// stays.
func TestConfigMapReloadAndRejection(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "config")
	// No target annotation: the target is container-concurrency-target-default
	// (at the example's 100% utilization).
	createApp(t, appDeployment(t, ns, "cfg", map[string]string{"autoscaling.knative.dev/target": "",
		"autoscaling.knative.dev/initial-scale": "0"}))
	waitFor(t, 20*time.Second, "the default target 100", func() (bool, string) {
		s, ok, state := status(ctx, ns, "cfg")
		return ok && s.Target == 100, state
	})
	changed := setDefaultTarget(t, ns, "cfg", 50)

	bad := maps.Clone(changed)
	bad["container-concurrency-target-default"] = "25"
	bad["stable-window"] = "3s"
	if err := setConfig(ctx, bad); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "a Warning Event on config-autoscaler naming the key and the value", func() (bool, string) {
		e, seen := findEvent(ctx, ebbNS, "ConfigMap", configName, corev1.EventTypeWarning, kplat.ReasonConfigRejected, "stable-window", `"3s"`)
		return e != nil, seen
	})
	time.Sleep(2 * time.Second) // a wrongly applied config would show by now
	if s, _, state := status(ctx, ns, "cfg"); s.Target != 50 {
		t.Errorf("after a rejected ConfigMap the target is %v, want the last good 50 (%s)", s.Target, state)
	}
}

// setDefaultTarget sets config-autoscaler's
// container-concurrency-target-default to target (the suite's
// configuration is restored when the test ends) and waits until ns/name,
// which has no target annotation, decides with it; it returns the data set.
func setDefaultTarget(t *testing.T, ns, name string, target float64) map[string]string {
	t.Helper()
	ctx := context.Background()
	t.Cleanup(func() {
		if err := setConfig(context.Background(), suiteConfig); err != nil {
			t.Errorf("restoring config-autoscaler: %v", err)
		}
	})
	changed := maps.Clone(suiteConfig)
	changed["container-concurrency-target-default"] = fmt.Sprint(target)
	if err := setConfig(ctx, changed); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, fmt.Sprint("the new default target ", target), func() (bool, string) {
		s, ok, state := status(ctx, ns, name)
		return ok && s.Target == target, state
	})
	return changed
}

// TestConfigChangeKeepsZero: a revision at zero stays at zero when
// config-autoscaler changes (its decider restarts with the new settings,
// inactive, not at its initial scale, which once woke every revision at
// zero), and a request still wakes it.
func TestConfigChangeKeepsZero(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "cfgzero")
	createApp(t, appDeployment(t, ns, "cz", map[string]string{"autoscaling.knative.dev/target-burst-capacity": "0",
		"autoscaling.knative.dev/target": ""})) // the target: container-concurrency-target-default
	waitFor(t, 90*time.Second, "the new revision at its initial scale, then back at zero", func() (bool, string) {
		n, _ := replicas(ctx, ns, "cz")
		to, _ := route(ctx, ns, "cz")
		e, _ := findEvent(ctx, ns, "Deployment", "cz", corev1.EventTypeNormal, "", "scaled from 1 to 0")
		return n == 0 && to == kplat.RouteActivator && e != nil, fmt.Sprintf("%d replicas, route %s", n, to)
	})
	setDefaultTarget(t, ns, "cz", 50)
	for end := time.Now().Add(12 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if n, err := replicas(ctx, ns, "cz"); err != nil || n != 0 {
			s, _, state := status(ctx, ns, "cz")
			t.Fatalf("after the change: %d replicas (%v), want 0 until a request; status %+v %s", n, err, s.DecisionView, state)
		}
	}
	rc := newRouteClient(t, env.client, ns, "cz")
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if code, addr, err := rc.get(rctx); err != nil || code != http.StatusOK {
		t.Errorf("request at zero after the change via %s: status %d, error %v; want 200", addr, code, err)
	}
}
