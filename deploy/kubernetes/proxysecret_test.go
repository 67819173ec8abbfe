package kubernetes

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/stats"
)

// TestProxySecretWiring: the activators and the example revision's
// queue-proxy (injected, and in the long form) read the same Secret key (stats.ProxySecretName and
// ProxySecretKey) into ACTIVATOR_PROXY_SECRET, optionally, so the marker
// can be verified.
func TestProxySecretWiring(t *testing.T) {
	want := map[string]string{config.ActivatorName: "activator", "hello": "queue-proxy"}
	found := map[string]int{}
	// hello: the pod the webhook makes of the example, and the long form.
	deps := []*appsv1.Deployment{deployment(t, config.ActivatorName), longForm(t)}
	short := deployment(t, "hello")
	short.Spec.Template.Spec = injected(t, short).Spec
	deps = append(deps, short)
	for _, d := range deps {
		container, ok := want[d.Name]
		if !ok {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name != container {
				continue
			}
			for _, e := range c.Env {
				if e.Name != stats.ProxySecretEnv {
					continue
				}
				found[d.Name]++
				var ref *corev1.SecretKeySelector
				if e.ValueFrom != nil {
					ref = e.ValueFrom.SecretKeyRef
				}
				if ref == nil || ref.Name != stats.ProxySecretName || ref.Key != stats.ProxySecretKey || ref.Optional == nil || !*ref.Optional {
					t.Errorf("%s/%s %s = %+v: want an optional secretKeyRef %s/%s", d.Name, container, e.Name, e.ValueFrom,
						stats.ProxySecretName, stats.ProxySecretKey)
				}
			}
		}
	}
	for name, container := range want {
		if n := map[string]int{config.ActivatorName: 1, "hello": 2}[name]; found[name] != n {
			t.Errorf("%s/%s has no %s", name, container, stats.ProxySecretEnv)
		}
	}
}
