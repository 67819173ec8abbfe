package convert

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/manifest"
)

// Options configure a conversion.
type Options struct {
	// Sidecar writes the queue-proxy container into each Knative
	// revision's pod template (the long form, for clusters without the
	// injection webhook): the webhook's injection (pkg/manifest/inject) applied to
	// the template.
	Sidecar bool
	// QueueProxyImage is the queue-proxy's image in the long form
	// (default DefaultQueueProxyImage).
	QueueProxyImage string
}

// DefaultQueueProxyImage is the image deploy/kubernetes uses.
const DefaultQueueProxyImage = "ebb.dev/queueproxy:dev"

// Object is one object of the output and where it came from.
type Object struct {
	// Comment says what the object was converted from, or that it passes
	// through unchanged (one line, no '#').
	Comment string
	// Value is the object: a typed Kubernetes object or raw JSON.
	Value any
}

// Result is the output of Convert.
type Result struct {
	Objects []Object
	// Warnings name fields that are read differently or not at all while
	// the object still converts (a Knative revision name, say).
	Warnings []string
}

// Convert converts every Knative object and every HPA of set (with the
// Deployment it targets), and passes the other objects through. On any
// error it returns nil and all the errors (errors.Join), each naming the
// object and the field.
func Convert(set *manifest.Set, o Options) (*Result, error) {
	if o.QueueProxyImage == "" {
		o.QueueProxyImage = DefaultQueueProxyImage
	}
	res := &Result{}
	var errs []error
	targets, hpaErrs := matchHPAs(set)
	errs = append(errs, hpaErrs...)
	for _, cm := range set.ConfigMaps {
		res.Objects = append(res.Objects, Object{Comment: "unchanged: " + cm.Origin.String(), Value: cm.Object})
	}
	for i, d := range set.Deployments {
		obj, warnings, err := convertDeployment(d, targets[i], o)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		res.Warnings = append(res.Warnings, warnings...)
		res.Objects = append(res.Objects, obj)
	}
	for _, ig := range set.Ignored {
		res.Objects = append(res.Objects, Object{Comment: "unchanged: " + ig.Origin.String(), Value: rawJSON(ig.JSON)})
	}
	errs = append(errs, clashes(set)...)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return res, nil
}

// convertDeployment converts one Deployment: a Knative revision's, one an
// HPA targets (hpa non-nil), or another, which passes through.
func convertDeployment(d manifest.Deployment, hpa *manifest.HPA, o Options) (Object, []string, error) {
	id := fmt.Sprintf("%s %s/%s at %s", d.Kind(), d.Namespace(), d.Name(), d.Origin)
	switch {
	case d.Knative != nil:
		return convertKnative(d, id, o)
	case hpa != nil:
		dep, err := applyHPA(d, *hpa)
		if err != nil {
			return Object{}, nil, err
		}
		comment := fmt.Sprintf("from %s and %s HorizontalPodAutoscaler %s/%s at %s", id, hpa.APIVersion,
			hpa.Namespace(), hpa.Name(), hpa.Origin)
		if o.Sidecar {
			comment += "; no queue-proxy: its cpu and memory metrics are measured by the platform"
		}
		return Object{Comment: comment, Value: dep}, nil, nil
	}
	return Object{Comment: "unchanged: " + d.Origin.String(), Value: d.Object}, nil, nil
}

// convertKnative writes a Knative revision's Deployment, its timeouts as
// the queue-proxy's variables on the app's container, where the injection
// (pkg/manifest/inject) and the activator (the Kubernetes platform) read them.
func convertKnative(d manifest.Deployment, id string, o Options) (Object, []string, error) {
	var errs []error
	for _, e := range d.Knative.Errors {
		errs = append(errs, fmt.Errorf("%s: %s", id, e))
	}
	errs = append(errs, reservedEnv(id, d.Object.Spec.Template.Spec.Containers)...)
	if err := errors.Join(errs...); err != nil {
		return Object{}, nil, err
	}
	warnings := make([]string, len(d.Knative.Warnings))
	for i, w := range d.Knative.Warnings {
		warnings[i] = id + ": " + w
	}
	dep := d.Object.DeepCopy()
	app := &dep.Spec.Template.Spec.Containers[0]
	app.Env = append(app.Env, d.Knative.Timeouts.Env()...)
	// The injection runs in both forms: what the webhook would refuse, or
	// warn of, at each pod's creation is said now.
	long, injected, err := LongForm(dep, o.QueueProxyImage)
	if err != nil {
		return Object{}, nil, fmt.Errorf("%s: %w", id, err)
	}
	for _, w := range injected {
		warnings = append(warnings, id+": "+w)
	}
	if o.Sidecar {
		dep = long
	} else {
		labelForInjection(dep)
	}
	return Object{Comment: "from " + id, Value: dep}, warnings, nil
}

// reservedEnv refuses the queue-proxy's timeout variables in a Knative
// container's environment: on Ebb they set the revision's timeouts (Knative
// sets them from timeoutSeconds and its siblings), so the converted
// revision would read a timeout the Knative one does not have.
func reservedEnv(id string, cs []corev1.Container) []error {
	var errs []error
	for ci, c := range cs {
		for ei, e := range c.Env {
			if e.Name == config.EnvRevisionTimeout || e.Name == config.EnvResponseStartTimeout || e.Name == config.EnvIdleTimeout {
				errs = append(errs, fmt.Errorf("%s: spec.template.spec.containers[%d].env[%d]: %s is the queue-proxy's timeout variable, "+
					"which Ebb reads from the revision's containers; set timeoutSeconds, responseStartTimeoutSeconds or "+
					"idleTimeoutSeconds instead, or rename the variable", id, ci, ei, e.Name))
			}
		}
	}
	return errs
}

// optIn labels a Deployment as an Ebb revision: the autoscaler watches
// Deployments by this label.
func optIn(d *appsv1.Deployment) { d.Labels = withEnabled(d.Labels) }

// labelForInjection labels a Deployment's pod template too: the webhook
// selects pods by their own labels and injects the queue-proxy into
// those that carry it (pkg/manifest/inject), and the Kubernetes platform reads the
// template label as "has a queue-proxy" (kubernetes.Sidecarless). The
// long form and an HPA-class revision on cpu and memory go without it:
// their pods need no injection, and must not wait on the webhook.
func labelForInjection(d *appsv1.Deployment) {
	d.Spec.Template.Labels = withEnabled(d.Spec.Template.Labels)
}

func withEnabled(labels map[string]string) map[string]string {
	labels = maps.Clone(labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[config.LabelEnabled] = "true"
	return labels
}

// clashes are two revisions of one name, and v1 Services named as a
// Knative revision: Ebb owns the Services NAME and NAME-private of a
// revision with the queue-proxy, and would fight over a second one.
func clashes(set *manifest.Set) []error {
	var errs []error
	seen := map[string]manifest.Deployment{}
	for _, d := range set.Deployments {
		key := d.Namespace() + "/" + d.Name()
		if prev, dup := seen[key]; dup {
			errs = append(errs, fmt.Errorf("%s %s at %s: %s at %s has the same namespace and name; keep one, or rename one",
				d.Kind(), key, d.Origin, prev.Kind(), prev.Origin))
			continue
		}
		seen[key] = d
	}
	for _, ig := range set.Ignored {
		if ig.APIVersion != "v1" || ig.Kind != "Service" {
			continue
		}
		ns := namespaceOf(ig.JSON)
		for _, name := range []string{ig.Name, strings.TrimSuffix(ig.Name, "-private")} {
			if d, ok := seen[ns+"/"+name]; ok && d.Knative != nil {
				errs = append(errs, fmt.Errorf("v1 Service %s/%s at %s: Ebb creates and owns the Services %s and %s-private of "+
					"the revision converted from %s %s/%s at %s; remove this Service from the input", ns, ig.Name, ig.Origin, name, name,
					d.Kind(), ns, name, d.Origin))
				break
			}
		}
	}
	return errs
}

// namespaceOf is an object's metadata.namespace, manifest.DefaultNamespace
// when unset.
func namespaceOf(js []byte) string {
	var m struct {
		Metadata struct {
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if json.Unmarshal(js, &m) != nil || m.Metadata.Namespace == "" {
		return manifest.DefaultNamespace
	}
	return m.Metadata.Namespace
}
