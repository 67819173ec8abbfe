package kubernetes

import "ebb.dev/ebb/pkg/platform/kubernetes/cluster"

// Labels, annotations and names the platform reads and writes.
const (
	// ManagedByLabel marks the Services and EndpointSlices Ebb owns, with
	// the value ManagedBy.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedBy is the value of ManagedByLabel on Ebb's objects.
	ManagedBy = "ebb"
	// RevisionLabel names, on Ebb's Services and EndpointSlices, the
	// revision (the Deployment's name) they belong to.
	RevisionLabel = "autoscaling.ebb.dev/revision"
	// RouteLabel says what the public EndpointSlice points at: "activator"
	// or "pods" (for people and tests; the platform keeps its own state).
	RouteLabel = "autoscaling.ebb.dev/route"
	// endpointSliceManager is the EndpointSlice manager label value:
	// Kubernetes' EndpointSlice controller leaves these slices alone.
	endpointSliceManager = "autoscaler.ebb.dev"
	// PortName is the name of the serving port on Ebb's Services and
	// EndpointSlices (the activator's Service uses it too).
	PortName = cluster.PortName
	// adminPortName is the queue-proxy's admin port on the private Service.
	adminPortName = "admin"
	// PrivateSuffix makes the private Service's name: NAME-private.
	PrivateSuffix = "-private"
	// sliceSuffix makes the public EndpointSlice's name: NAME-ebb.
	// Generated names of Kubernetes' controller are NAME-<5 characters>,
	// so they never collide.
	sliceSuffix = "-ebb"

	// Route values of RouteLabel.
	RouteActivator = "activator"
	RoutePods      = "pods"
)

// PublicServiceName is the name of the Service clients call for a
// revision: the Deployment's name.
func PublicServiceName(revision string) string { return revision }

// PrivateServiceName is the name of the Service selecting a revision's pods.
func PrivateServiceName(revision string) string { return revision + PrivateSuffix }

// PublicSliceName is the name of the EndpointSlice of the public Service.
func PublicSliceName(revision string) string { return revision + sliceSuffix }
