package reconciler

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSidecarless: a Deployment is sidecarless when its pods get no
// queue-proxy: none in the template, and no injection label on it.
func TestSidecarless(t *testing.T) {
	dep := func(labels map[string]string, containers ...string) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		d.Spec.Template.ObjectMeta = metav1.ObjectMeta{Labels: labels}
		for _, c := range containers {
			d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: c})
		}
		return d
	}
	tests := []struct {
		name string
		d    *appsv1.Deployment
		want bool
	}{
		{"app only", dep(nil, "app"), true},
		{"sidecar by hand", dep(nil, "app", "queue-proxy"), false},
		{"injected", dep(map[string]string{"autoscaling.ebb.dev/enabled": "true"}, "app"), false},
		{"label false", dep(map[string]string{"autoscaling.ebb.dev/enabled": "false"}, "app"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Sidecarless(tt.d); got != tt.want {
				t.Errorf("Sidecarless = %v, want %v", got, tt.want)
			}
		})
	}
}
