package convert

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/manifest/inject"
)

// LongForm is short, an opted-in Deployment, as written for a cluster
// without the injection webhook: the webhook's injection (pkg/manifest/inject,
// deploy/'s settings with the given image) applied to its pod template, as
// the API server applies it to each pod, and the template's opt-in label
// removed (its pods need no injection, and must not wait on the webhook).
// It returns the injection's warnings, naming the template's fields.
func LongForm(short *appsv1.Deployment, image string) (*appsv1.Deployment, []string, error) {
	tmpl := &short.Spec.Template
	for _, c := range tmpl.Spec.Containers {
		if c.Name == inject.ContainerName {
			// The injection would take it for the sidecar and do nothing.
			return nil, nil, fmt.Errorf("spec.template.spec.containers: a container is already named %q; rename the app's container",
				inject.ContainerName)
		}
	}
	pod := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
	res, err := inject.Pod(inject.Input{Pod: pod, Revision: short.Name}, inject.DefaultSettings(image))
	if err != nil {
		return nil, nil, fmt.Errorf("spec.template: %w", err)
	}
	patched, err := applyPatch(pod, res.Patch)
	if err != nil {
		return nil, nil, fmt.Errorf("spec.template: applying the injection: %w", err)
	}
	long := short.DeepCopy()
	long.Spec.Template.Spec = patched.Spec
	if _, ok := long.Spec.Template.Labels[config.LabelEnabled]; ok {
		long.Spec.Template.Labels = maps.Clone(long.Spec.Template.Labels)
		delete(long.Spec.Template.Labels, config.LabelEnabled)
	}
	warnings := make([]string, len(res.Warnings))
	for i, w := range res.Warnings {
		if strings.HasPrefix(w, "spec.") {
			w = "spec.template." + w
		}
		warnings[i] = w
	}
	return long, warnings, nil
}

// applyPatch applies a JSON patch to a pod as the API server does.
func applyPatch(pod *corev1.Pod, ops []inject.Operation) (*corev1.Pod, error) {
	doc, err := json.Marshal(pod)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	p, err := jsonpatch.DecodePatch(raw)
	if err != nil {
		return nil, err
	}
	out, err := p.Apply(doc)
	if err != nil {
		return nil, err
	}
	var patched corev1.Pod
	if err := json.Unmarshal(out, &patched); err != nil {
		return nil, err
	}
	return &patched, nil
}
