package kubernetes

import (
	"path"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/stats"
)

// TestProxySecretWiring: the activators read the install's proxy secret
// from the Secret the autoscaler makes (stats.ProxySecretName, key
// stats.ProxySecretKey), mounted as a file they follow, not optional (the
// kubelet starts them once it exists), and never as a copy in another
// namespace; the autoscaler keeps that Secret (its --proxy-secret default,
// not overridden). The webhook gives each sidecar its namespace's secret
// as a value (pkg/platform/kubernetes/webhook); without the webhook, the long form reads it
// from a Secret of its own namespace, optionally.
func TestProxySecretWiring(t *testing.T) {
	act := deployment(t, config.ActivatorName)
	c := act.Spec.Template.Spec.Containers[0]
	var file string
	for _, e := range c.Env {
		switch e.Name {
		case stats.ProxySecretEnv:
			t.Errorf("activator %s = %+v: read the install's secret from the file (%s_FILE)", e.Name, e, stats.ProxySecretEnv)
		case stats.ProxySecretEnv + "_FILE":
			file = e.Value
		}
	}
	if file == "" {
		t.Fatalf("the activator has no %s_FILE", stats.ProxySecretEnv)
	}
	var vol *corev1.Volume
	for _, m := range c.VolumeMounts {
		if path.Dir(file) != m.MountPath {
			continue
		}
		for i, v := range act.Spec.Template.Spec.Volumes {
			if v.Name == m.Name {
				vol = &act.Spec.Template.Spec.Volumes[i]
			}
		}
	}
	if vol == nil || vol.Secret == nil {
		t.Fatalf("%s_FILE %s is on no Secret volume", stats.ProxySecretEnv, file)
	}
	s := vol.Secret
	if s.SecretName != stats.ProxySecretName || (s.Optional != nil && *s.Optional) ||
		!slices.Equal(s.Items, []corev1.KeyToPath{{Key: stats.ProxySecretKey, Path: path.Base(file)}}) {
		t.Errorf("volume %+v: want the Secret %s, key %s at %s, not optional", s, stats.ProxySecretName, stats.ProxySecretKey, path.Base(file))
	}

	for _, a := range deployment(t, config.AutoscalerName).Spec.Template.Spec.Containers[0].Args {
		if len(a) > len("--proxy-secret") && a[:len("--proxy-secret")] == "--proxy-secret" {
			t.Errorf("the autoscaler has %s: the activators mount %s", a, stats.ProxySecretName)
		}
	}

	// The long form (and the injection without the webhook's secret).
	for _, d := range []*appsv1.Deployment{longForm(t), func() *appsv1.Deployment {
		short := deployment(t, "hello")
		short.Spec.Template.Spec = injected(t, short).Spec
		return short
	}()} {
		found := 0
		for _, c := range d.Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				if e.Name != stats.ProxySecretEnv {
					continue
				}
				found++
				var ref *corev1.SecretKeySelector
				if e.ValueFrom != nil {
					ref = e.ValueFrom.SecretKeyRef
				}
				if c.Name != "queue-proxy" || ref == nil || ref.Name != stats.ProxySecretName || ref.Key != stats.ProxySecretKey ||
					ref.Optional == nil || !*ref.Optional {
					t.Errorf("%s/%s %s = %+v: want the queue-proxy's optional secretKeyRef %s/%s", d.Name, c.Name, e.Name, e.ValueFrom,
						stats.ProxySecretName, stats.ProxySecretKey)
				}
			}
		}
		if found != 1 {
			t.Errorf("%s: %d %s, want 1", d.Name, found, stats.ProxySecretEnv)
		}
	}
}
