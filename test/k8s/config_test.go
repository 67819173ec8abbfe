//go:build k8s

package k8s

import (
	"context"
	"maps"
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
	t.Cleanup(func() {
		if err := setConfig(context.Background(), suiteConfig); err != nil {
			t.Errorf("restoring config-autoscaler: %v", err)
		}
	})

	changed := maps.Clone(suiteConfig)
	changed["container-concurrency-target-default"] = "50"
	if err := setConfig(ctx, changed); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "the new default target 50", func() (bool, string) {
		s, ok, state := status(ctx, ns, "cfg")
		return ok && s.Target == 50, state
	})

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
