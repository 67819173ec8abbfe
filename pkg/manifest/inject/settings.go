package inject

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/stats"
)

// ContainerName is the sidecar's name: a pod that has a container of this
// name is left alone.
const ContainerName = config.QueueProxyContainer

// Port names of the sidecar: the Service routes to ServingPortName, the
// autoscaler scrapes AdminPortName.
const (
	servingPortName = "http"
	AdminPortName   = "admin"
)

// Settings are the sidecar's install-wide settings (the autoscaler's
// --webhook-* flags).
type Settings struct {
	// Image is the queue-proxy image; must not be empty.
	Image string
	// ImagePullPolicy is the sidecar's pull policy; empty: Kubernetes'
	// default for the image's tag.
	ImagePullPolicy corev1.PullPolicy
	// ServingPort and AdminPort are the queue-proxy's ports (8012, 9090):
	// they must match the autoscaler's --queue-serving-port and
	// --queue-admin-port.
	ServingPort, AdminPort int32
	// DrainPeriod is DRAIN_PERIOD_SECONDS, and the app's preStop sleep
	// when it has no preStop hook of its own.
	DrainPeriod time.Duration
	// ProxySecret is the pod's namespace's proxy secret
	// (stats.NamespaceProxySecret of the install's), written into the
	// sidecar's ACTIVATOR_PROXY_SECRET: the webhook sets it for each pod.
	// Empty: ProxySecretName.
	ProxySecret string
	// ProxySecretName is the Secret (in the pod's namespace) the sidecar
	// reads ACTIVATOR_PROXY_SECRET from, optionally, without ProxySecret
	// (the long form: docs/kubernetes.md); empty: none.
	ProxySecretName string
	// Resources are the sidecar's requests and limits.
	Resources corev1.ResourceRequirements
}

// DefaultSettings are those of deploy/: the long form of docs/kubernetes.md.
func DefaultSettings(image string) Settings {
	return Settings{
		Image: image, ServingPort: config.QueueServingPort, AdminPort: config.QueueAdminPort, DrainPeriod: 15 * time.Second,
		ProxySecretName: stats.ProxySecretName,
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("25m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		},
	}
}
