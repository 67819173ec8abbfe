package manifest

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"ebb.dev/ebb/pkg/config"
)

// KnativeServingV1 is the apiVersion of the Knative objects Ebb reads:
// Service and Configuration.
const KnativeServingV1 = "serving.knative.dev/v1"

// Kinds of KnativeServingV1 that Decode reads as revisions.
const (
	kindKnativeService       = "Service"
	kindKnativeConfiguration = "Configuration"
)

// The pod labels Knative puts on a revision's pods; the Deployment made
// from a Knative object selects its pods by the first that applies.
const (
	labelKnativeService       = config.LabelKnativeService
	labelKnativeConfiguration = config.LabelKnativeConfiguration
)

// defaultKnativePort is Knative's container port when the container names
// none: the app's PORT.
const defaultKnativePort = 8080

// knativeContainerName is Knative's name for an unnamed app container (a
// Deployment's containers must be named).
const knativeContainerName = "user-container"

// Knative is what a Deployment made from a Knative Service or Configuration
// carries besides the Deployment itself.
type Knative struct {
	Kind     string   // KindKnativeService or KindKnativeConfiguration
	Timeouts Timeouts // the template's timeouts, as given
	// Errors are what Ebb cannot honour (a traffic split, a second
	// container, ...), each naming the field and the fix. A revision with
	// errors is invalid: validate reports them, the local platform does
	// not run it.
	Errors []string
	// Warnings are fields Ebb reads differently or not at all while the
	// revision still runs as written (a revision name, Knative's
	// networking annotations), each naming the field.
	Warnings []string
}

// knativeObject is a serving.knative.dev/v1 Service or Configuration, as
// far as Ebb reads it. Unknown fields are errors, as on a cluster.
type knativeObject struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		Template *knativeTemplate `json:"template"`
		Traffic  []knativeTraffic `json:"traffic,omitempty"` // Service only
	} `json:"spec"`
	Status json.RawMessage `json:"status,omitempty"` // written by Knative; not configuration
}

type knativeTemplate struct {
	Metadata metav1.ObjectMeta   `json:"metadata"`
	Spec     knativeRevisionSpec `json:"spec"`
}

// knativeRevisionSpec is Knative's RevisionSpec: a PodSpec with four
// fields of its own.
type knativeRevisionSpec struct {
	corev1.PodSpec
	ContainerConcurrency        *int64 `json:"containerConcurrency,omitempty"`
	TimeoutSeconds              *int64 `json:"timeoutSeconds,omitempty"`
	ResponseStartTimeoutSeconds *int64 `json:"responseStartTimeoutSeconds,omitempty"`
	IdleTimeoutSeconds          *int64 `json:"idleTimeoutSeconds,omitempty"`
}

type knativeTraffic struct {
	Tag            string `json:"tag,omitempty"`
	RevisionName   string `json:"revisionName,omitempty"`
	LatestRevision *bool  `json:"latestRevision,omitempty"`
	Percent        *int64 `json:"percent,omitempty"`
}

// addKnative decodes a Knative Service or Configuration into the Deployment
// Ebb runs for it. What a cluster's API server would reject (unknown
// fields, no name, no container) fails the document; what Ebb cannot
// honour goes to the Deployment's Knative.Errors.
func (s *Set) addKnative(o Origin, tm typeMeta, js []byte) error {
	what := KnativeServingV1 + " " + tm.Kind
	if tm.APIVersion != KnativeServingV1 {
		return fmt.Errorf("Knative %s has apiVersion %q; want %s (convert older objects with Knative's own tools)",
			tm.Kind, tm.APIVersion, KnativeServingV1)
	}
	k := &knativeObject{}
	if err := decodeStrict(js, k); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	switch {
	case k.Metadata.Name == "":
		return fmt.Errorf("%s: metadata.name is required", what)
	case k.Spec.Template == nil:
		return fmt.Errorf("%s: spec.template is required: the revision's pod template", what)
	case len(k.Spec.Template.Spec.Containers) == 0:
		return fmt.Errorf("%s: spec.template.spec.containers is required: the app's container", what)
	case tm.Kind == kindKnativeConfiguration && k.Spec.Traffic != nil:
		return fmt.Errorf("%s: unknown field \"spec.traffic\" (a Configuration has no traffic; a Service has)", what)
	}
	kn := &Knative{Kind: tm.Kind}
	d := k.deployment(kn)
	s.Deployments = append(s.Deployments, Deployment{Origin: o, Object: d, Knative: kn})
	return nil
}

// deployment builds the Deployment of the revision and records in kn what
// it could not carry over.
func (k *knativeObject) deployment(kn *Knative) *appsv1.Deployment {
	r := &knativeReader{kn: kn}
	r.metadata(k)
	r.traffic(k.Spec.Traffic)
	spec := &k.Spec.Template.Spec
	kn.Timeouts = r.timeouts(spec)
	annotations := maps.Clone(k.Spec.Template.Metadata.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	r.containerConcurrency(spec.ContainerConcurrency, annotations)
	r.templateAnnotations(annotations)
	pod := *spec.PodSpec.DeepCopy()
	r.containers(&pod)

	selector := map[string]string{labelKnativeService: k.Metadata.Name}
	if k.Kind == kindKnativeConfiguration {
		selector = map[string]string{labelKnativeConfiguration: k.Metadata.Name}
	}
	labels := maps.Clone(k.Metadata.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[config.LabelEnabled] = "true" // a Knative revision is always autoscaled
	podLabels := maps.Clone(k.Spec.Template.Metadata.Labels)
	if podLabels == nil {
		podLabels = map[string]string{}
	}
	maps.Copy(podLabels, selector)
	zero := int32(0)
	return &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: k.Metadata.Name, Namespace: k.Metadata.Namespace,
			Labels: labels, Annotations: maps.Clone(k.Metadata.Annotations)},
		Spec: appsv1.DeploymentSpec{
			Replicas: &zero, // the autoscaler owns the count
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: annotations},
				Spec:       pod,
			},
		},
	}
}

// knativeReader collects the errors and warnings of one Knative object.
type knativeReader struct{ kn *Knative }

func (r *knativeReader) errorf(field, format string, args ...any) {
	r.kn.Errors = append(r.kn.Errors, field+": "+fmt.Sprintf(format, args...))
}

func (r *knativeReader) warnf(field, format string, args ...any) {
	r.kn.Warnings = append(r.kn.Warnings, field+": "+fmt.Sprintf(format, args...))
}

// knativeHarmless are Knative's bookkeeping annotations (kubectl get
// shows them); they configure nothing.
var knativeHarmless = []string{"serving.knative.dev/creator", "serving.knative.dev/lastModifier",
	"serving.knative.dev/routes", "serving.knative.dev/routingStateModified"}

func (r *knativeReader) metadata(k *knativeObject) {
	for _, key := range slices.Sorted(maps.Keys(k.Metadata.Annotations)) {
		path := fmt.Sprintf("metadata.annotations[%q]", key)
		switch {
		case isAutoscalingKey(key):
			r.errorf(path, "a revision's autoscaling settings are read from the template only; "+
				"move the annotation to spec.template.metadata.annotations")
		case strings.Contains(key, "knative.dev/") && !slices.Contains(knativeHarmless, key):
			r.warnf(path, "Knative's annotation has no effect on Ebb; it is kept on the Deployment")
		}
	}
	for _, key := range slices.Sorted(maps.Keys(k.Metadata.Labels)) {
		if strings.Contains(key, "knative.dev/") {
			r.warnf(fmt.Sprintf("metadata.labels[%q]", key), "Knative's label has no effect on Ebb (Ebb owns the Service "+
				"NAME in the namespace and routes every request to the revision); it is kept on the Deployment")
		}
	}
	if n := k.Spec.Template.Metadata.Name; n != "" {
		r.warnf("spec.template.metadata.name", "the revision name %q is not used: Ebb keeps one revision per %s, "+
			"named after it (%s/%s)", n, k.Kind, namespaceOr(k.Metadata.Namespace), k.Metadata.Name)
	}
}

func isAutoscalingKey(key string) bool {
	return strings.HasPrefix(key, config.KnativeAutoscalingPrefix) || strings.HasPrefix(key, config.EbbAutoscalingPrefix)
}

func namespaceOr(ns string) string {
	if ns == "" {
		return DefaultNamespace
	}
	return ns
}

// traffic accepts Knative's default (all traffic to the latest revision)
// and refuses everything else: Ebb runs one revision per Service.
func (r *knativeReader) traffic(ts []knativeTraffic) {
	const fix = "Ebb runs the latest template only and sends it every request; remove spec.traffic, " +
		"or deploy each revision you split traffic to as a Service of its own"
	for i, t := range ts {
		at := fmt.Sprintf("spec.traffic[%d]", i)
		if t.Tag != "" {
			r.errorf(at+".tag", "%q: tags are not supported; %s", t.Tag, fix)
		}
		if t.RevisionName != "" {
			r.errorf(at+".revisionName", "%q: routing to a named revision is not supported; %s", t.RevisionName, fix)
		}
		if t.LatestRevision != nil && !*t.LatestRevision {
			r.errorf(at+".latestRevision", "false: only the latest revision runs; %s", fix)
		}
		if t.Percent != nil && *t.Percent != 100 {
			r.errorf(at+".percent", "%d: a traffic split is not supported (the latest revision gets 100%%); %s", *t.Percent, fix)
		}
	}
}

func (r *knativeReader) timeouts(spec *knativeRevisionSpec) Timeouts {
	const base = "spec.template.spec."
	var t Timeouts
	fields := [3]struct {
		name string
		v    *int64
	}{{"timeoutSeconds", spec.TimeoutSeconds}, {"responseStartTimeoutSeconds", spec.ResponseStartTimeoutSeconds},
		{"idleTimeoutSeconds", spec.IdleTimeoutSeconds}}
	for i, f := range fields {
		if f.v == nil {
			continue
		}
		env := config.TimeoutEnvs[i]
		d, err := config.ParseTimeoutSeconds(env, strconv.FormatInt(*f.v, 10))
		if err != nil {
			r.errorf(base+f.name, "%d: %v (the queue-proxy's %s); fix the value, or remove it for Knative's default", *f.v, err, env)
			continue
		}
		*t.fields()[i] = &d
	}
	request := config.DefaultRevisionTimeout
	if t.Request != nil {
		request = *t.Request
	}
	for i, v := range [2]*time.Duration{t.ResponseStart, t.Idle} {
		if v != nil && *v > request {
			r.errorf(base+fields[i+1].name, "%d: must not exceed the request timeout (timeoutSeconds, %s); lower it, or raise timeoutSeconds",
				*fields[i+1].v, request)
		}
	}
	return t
}

// containerConcurrency writes Knative's containerConcurrency as Ebb's
// annotation, where the decider, the activator and the queue-proxy read it.
func (r *knativeReader) containerConcurrency(cc *int64, annotations map[string]string) {
	const at = "spec.template.spec.containerConcurrency"
	if cc == nil {
		return
	}
	if *cc < 0 || *cc > config.ContainerConcurrencyMax {
		r.errorf(at, "%d: must be within [0, %d] (Knative's container-concurrency-max-limit); 0 is unlimited",
			*cc, config.ContainerConcurrencyMax)
		return
	}
	v := strconv.FormatInt(*cc, 10)
	if prev, ok := annotations[config.AnnotationContainerConcurrency]; ok && prev != v {
		r.errorf(at, "%s, but the annotation %s is %q; keep one of them (the field is Knative's)",
			v, config.AnnotationContainerConcurrency, prev)
		return
	}
	annotations[config.AnnotationContainerConcurrency] = v
}

// templateAnnotations warns of Knative annotations Ebb does not read;
// autoscaling.* annotations are checked by config.NewRevision.
func (r *knativeReader) templateAnnotations(annotations map[string]string) {
	for _, key := range slices.Sorted(maps.Keys(annotations)) {
		if isAutoscalingKey(key) || key == config.AnnotationProgressDeadline || !strings.Contains(key, "knative.dev/") {
			continue
		}
		r.warnf(fmt.Sprintf("spec.template.metadata.annotations[%q]", key),
			"Knative's annotation has no effect on Ebb; it is kept on the pod template")
	}
}

// containers checks the app's container and completes it as Knative
// does: the container port is 8080 when none is given, PORT is set to it,
// and a readiness probe without a port probes it.
func (r *knativeReader) containers(pod *corev1.PodSpec) {
	const base = "spec.template.spec.containers"
	for i := range pod.Containers[1:] {
		r.errorf(fmt.Sprintf("%s[%d]", base, i+1), "%q: Ebb runs one container per revision, the app behind its queue-proxy; "+
			"fold the sidecar into the app, or write the revision as an apps/v1 Deployment", pod.Containers[i+1].Name)
	}
	c := &pod.Containers[0]
	if c.Name == "" {
		c.Name = knativeContainerName
	}
	port := int32(defaultKnativePort)
	switch len(c.Ports) {
	case 0:
		c.Ports = []corev1.ContainerPort{{ContainerPort: port}}
	case 1:
		p := &c.Ports[0]
		if p.ContainerPort != 0 {
			port = p.ContainerPort
		}
		p.ContainerPort = port
		if p.Name != "" && p.Name != config.PortNameH2C && p.Name != "http1" {
			r.errorf(base+"[0].ports[0].name", "%q: must be http1 or h2c (Knative's rule: h2c for an app that speaks only "+
				"HTTP/2 cleartext, such as a gRPC server); rename the port", p.Name)
		}
	default:
		r.errorf(base+"[0].ports", "%d ports: a revision serves on one port; keep the one the app serves requests on", len(c.Ports))
	}
	for i, e := range c.Env {
		if e.Name == "PORT" {
			r.errorf(fmt.Sprintf("%s[0].env[%d]", base, i), "PORT is reserved: it is set to the container port (%d); "+
				"remove it, and set ports[0].containerPort to change the port", port)
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: "PORT", Value: strconv.Itoa(int(port))})
	if p := c.ReadinessProbe; p != nil {
		switch {
		case p.HTTPGet != nil && p.HTTPGet.Port == (intstr.IntOrString{}):
			p.HTTPGet.Port = intstr.FromInt32(port)
		case p.TCPSocket != nil && p.TCPSocket.Port == (intstr.IntOrString{}):
			p.TCPSocket.Port = intstr.FromInt32(port)
		}
	}
}

// isKnativeServing reports whether apiVersion is of Knative Serving's group
// (any version: an old one is refused with a message, not ignored).
func isKnativeServing(apiVersion string) bool {
	return strings.HasPrefix(apiVersion, "serving.knative.dev/")
}
