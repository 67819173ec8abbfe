package config

// Knative's names of a revision's parents, as its metrics' labels and its
// sidecar's environment carry them. In Knative a Service owns a
// Configuration of the same name, which stamps out Revisions; each
// revision's pods carry the labels below. Ebb's revision is a Deployment:
// one converted from a Knative Service or Configuration (`autoscaler
// convert`, pkg/manifest) keeps those labels, and a plain Deployment is
// its own configuration, owned by no Service.
const (
	// LabelKnativeService names the Knative Service a revision belongs to.
	LabelKnativeService = "serving.knative.dev/service"
	// LabelKnativeConfiguration names the Knative Configuration a
	// revision belongs to.
	LabelKnativeConfiguration = "serving.knative.dev/configuration"

	// UnknownName is the value of a metric label that has no value (a
	// revision no Service owns), as Knative writes it.
	UnknownName = "unknown"
)

// Knative's environment of the serving container's sidecar: the revision's
// name (not namespace/name), its namespace, Configuration and Service.
const (
	EnvServingNamespace     = "SERVING_NAMESPACE"
	EnvServingConfiguration = "SERVING_CONFIGURATION"
	EnvServingService       = "SERVING_SERVICE"
)

// KnativeNames are the names of a revision and its parents, as Knative
// labels its metrics: Namespace, Revision, Configuration and Service
// (UnknownName when there is none).
type KnativeNames struct {
	Namespace, Revision, Configuration, Service string
}

// NamesOf reads the Knative names of the revision namespace/name from its
// pods' labels (or the Deployment's): the configuration is the
// serving.knative.dev/configuration label, else the Service's (a Service's
// Configuration has its name), else the revision itself; the service is
// the serving.knative.dev/service label, else UnknownName.
func NamesOf(namespace, name string, labels map[string]string) KnativeNames {
	n := KnativeNames{Namespace: namespace, Revision: name, Configuration: name, Service: UnknownName}
	if s := labels[LabelKnativeService]; s != "" {
		n.Service, n.Configuration = s, s
	}
	if c := labels[LabelKnativeConfiguration]; c != "" {
		n.Configuration = c
	}
	return n
}

// Labels are the four label values in the order of KnativeLabelNames.
func (n KnativeNames) Labels() []string {
	return []string{n.Namespace, n.Revision, n.Configuration, n.Service}
}

// KnativeLabelNames are the label names of Knative's per-revision metrics.
var KnativeLabelNames = []string{"namespace_name", "revision_name", "configuration_name", "service_name"}
