package reconciler

import (
	appsv1 "k8s.io/api/apps/v1"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
)

// Labels, annotations and names the platform reads and writes.
const (
	// managedByLabel marks the Services and EndpointSlices Ebb owns, with
	// the value ManagedBy.
	managedByLabel = config.ManagedByLabel
	// managedBy is the value of ManagedByLabel on Ebb's objects.
	managedBy = config.ManagedBy
	// revisionLabel names, on Ebb's Services and EndpointSlices, the
	// revision (the Deployment's name) they belong to.
	revisionLabel = "autoscaling.ebb.dev/revision"
	// RouteLabel says what the public EndpointSlice points at: "activator"
	// or "pods" (for people and tests; the platform keeps its own state).
	RouteLabel = "autoscaling.ebb.dev/route"
	// endpointSliceManager is the EndpointSlice manager label value:
	// Kubernetes' EndpointSlice controller leaves these slices alone.
	endpointSliceManager = cluster.EndpointSliceManager
	// portName is the name of the serving port on Ebb's Services and
	// EndpointSlices (the activator's Service uses it too).
	portName = cluster.PortName
	// adminPortName is the queue-proxy's admin port on the private Service.
	adminPortName = config.PortNameAdmin
	// privateSuffix makes the private Service's name: NAME-private.
	privateSuffix = "-private"
	// sliceSuffix makes the public EndpointSlice's name: NAME-ebb.
	// Generated names of Kubernetes' controller are NAME-<5 characters>,
	// so they never collide.
	sliceSuffix = "-ebb"

	// queueProxyContainer is the name of Ebb's sidecar in a revision's pod
	// template. Without it the revision is sidecarless (see Sidecarless).
	queueProxyContainer = config.QueueProxyContainer

	// Route values of RouteLabel.
	RouteActivator = "activator"
	RoutePods      = "pods"
)

// publicServiceName is the name of the Service clients call for a
// revision: the Deployment's name.
func publicServiceName(revision string) string { return revision }

// privateServiceName is the name of the Service selecting a revision's pods.
func privateServiceName(revision string) string { return revision + privateSuffix }

// PublicSliceName is the name of the EndpointSlice of the public Service.
func PublicSliceName(revision string) string { return revision + sliceSuffix }

// Sidecarless reports whether a Deployment's pods run without Ebb's
// queue-proxy (no container named QueueProxyContainer, and no injection:
// the pod template does not carry the label config.LabelEnabled, which
// makes the webhook add the sidecar to each pod): an HPA-class
// revision on cpu and memory, moved from a Kubernetes HPA by adding the
// label and annotations. Ebb then leaves its Services alone (owns none,
// routes nothing: there is no queue-proxy to route to or probe) and only
// scales it; a scale to zero is refused, as nothing could wake it.
func Sidecarless(d *appsv1.Deployment) bool {
	if d.Spec.Template.Labels[config.LabelEnabled] == "true" {
		return false // injected by the webhook (pkg/manifest/inject)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == queueProxyContainer {
			return false
		}
	}
	return true
}
