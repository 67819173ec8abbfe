package convert

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/manifest"
)

// hpaID names an HPA in errors.
func hpaID(h manifest.HPA) string {
	return fmt.Sprintf("%s HorizontalPodAutoscaler %s/%s at %s", h.APIVersion, h.Namespace(), h.Name(), h.Origin)
}

// matchHPAs finds the Deployment each HPA targets: targets[i] is the HPA
// of set.Deployments[i]. An HPA whose target is not an apps/v1 Deployment
// among the inputs, or a Deployment two HPAs target, is an error.
func matchHPAs(set *manifest.Set) (map[int]*manifest.HPA, []error) {
	byKey := map[string]int{}
	for i, d := range set.Deployments {
		if d.Knative == nil {
			byKey[d.Namespace()+"/"+d.Name()] = i
		}
	}
	targets := map[int]*manifest.HPA{}
	var errs []error
	for _, h := range set.HPAs {
		ref := h.Object.Spec.ScaleTargetRef
		if ref.Kind != "Deployment" || (ref.APIVersion != "" && ref.APIVersion != "apps/v1") {
			errs = append(errs, fmt.Errorf("%s: spec.scaleTargetRef: %s %s %q: Ebb scales apps/v1 Deployments only; "+
				"target a Deployment, or keep this HPA as it is", hpaID(h), ref.APIVersion, ref.Kind, ref.Name))
			continue
		}
		i, ok := byKey[h.Namespace()+"/"+ref.Name]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: spec.scaleTargetRef: Deployment %s/%s is not among the inputs; "+
				"give its manifest too (the HPA's settings become annotations on its pod template)", hpaID(h), h.Namespace(), ref.Name))
			continue
		}
		if prev := targets[i]; prev != nil {
			errs = append(errs, fmt.Errorf("%s: spec.scaleTargetRef: Deployment %s/%s is also the target of %s; keep one HPA",
				hpaID(h), h.Namespace(), ref.Name, hpaID(*prev)))
			continue
		}
		targets[i] = &h
	}
	return targets, errs
}

// hpaKeys are the annotations an HPA sets; a Deployment that already has
// one of them is refused rather than overwritten.
var hpaKeys = []string{config.AnnotationClass, config.AnnotationMetric, config.AnnotationTarget, config.AnnotationMetrics,
	config.AnnotationBehavior, config.AnnotationMinScale, config.AnnotationMinScaleLegacy, config.AnnotationMaxScale,
	config.AnnotationMaxScaleLegacy}

// applyHPA returns the Deployment opted in, with the HPA's settings as the
// HPA class's annotations: min-scale and max-scale from minReplicas and
// maxReplicas, autoscaling.ebb.dev/metrics from its metrics (Kubernetes'
// default, cpu at 80%, when it has none), autoscaling.ebb.dev/behavior from
// its behavior.
func applyHPA(d manifest.Deployment, h manifest.HPA) (*appsv1.Deployment, error) {
	id := hpaID(h)
	spec := h.Object.Spec
	anns := maps.Clone(d.TemplateAnnotations())
	var errs []error
	for _, k := range hpaKeys {
		if v, ok := anns[k]; ok {
			errs = append(errs, fmt.Errorf("%s: Deployment %s/%s at %s already has the annotation %s = %q, which the HPA sets; "+
				"remove the annotation (or the HPA)", id, d.Namespace(), d.Name(), d.Origin, k, v))
		}
	}
	minReplicas := int32(1)
	if spec.MinReplicas != nil {
		minReplicas = *spec.MinReplicas
	}
	if minReplicas < 1 {
		errs = append(errs, fmt.Errorf("%s: spec.minReplicas: %d: Ebb's HPA class keeps at least one pod; set 1, "+
			"or scale on requests with the KPA class (autoscaling.knative.dev/class: %s) to reach zero", id, minReplicas, config.ClassKPA))
	}
	if spec.MaxReplicas < minReplicas || spec.MaxReplicas < 1 {
		errs = append(errs, fmt.Errorf("%s: spec.maxReplicas: %d: must be at least minReplicas (%d) and 1", id, spec.MaxReplicas, minReplicas))
	}
	metrics, merrs := metricsAnnotation(id, spec.Metrics)
	errs = append(errs, merrs...)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	anns[config.AnnotationClass] = config.ClassHPA
	anns[config.AnnotationMinScale] = strconv.Itoa(int(minReplicas))
	anns[config.AnnotationMaxScale] = strconv.Itoa(int(spec.MaxReplicas))
	if m := singleUtilization(spec.Metrics); m != nil {
		// What `kubectl autoscale --cpu-percent` makes reads best as
		// Knative's two annotations (deploy/local/php-apache.yaml).
		anns[config.AnnotationMetric] = m.Metric
		anns[config.AnnotationTarget] = strconv.FormatFloat(m.Target, 'f', -1, 64)
	} else {
		anns[config.AnnotationMetrics] = metrics
	}
	if spec.Behavior != nil {
		b, err := json.Marshal(spec.Behavior)
		if err != nil {
			return nil, fmt.Errorf("%s: spec.behavior: %w", id, err)
		}
		anns[config.AnnotationBehavior] = string(b)
	}
	dep := d.Object.DeepCopy()
	optIn(dep)
	dep.Spec.Template.Annotations = anns
	return dep, nil
}

// singleUtilization is the HPA's one metric when it is a pod-wide cpu or
// memory utilization (or none: Kubernetes' default, cpu at 80%), which
// Knative's metric and target annotations say exactly; nil otherwise.
func singleUtilization(ms []autoscalingv2.MetricSpec) *metricEntry {
	if len(ms) == 0 {
		return &metricEntry{Metric: string(corev1.ResourceCPU), Target: defaultCPUUtilization}
	}
	if len(ms) > 1 || ms[0].Type != autoscalingv2.ResourceMetricSourceType || ms[0].Resource == nil {
		return nil
	}
	r := ms[0].Resource
	if r.Target.Type != autoscalingv2.UtilizationMetricType || r.Target.AverageUtilization == nil ||
		(r.Name != corev1.ResourceCPU && r.Name != corev1.ResourceMemory) {
		return nil
	}
	return &metricEntry{Metric: string(r.Name), Target: float64(*r.Target.AverageUtilization)}
}

// defaultCPUUtilization is Kubernetes' target of an HPA without metrics.
const defaultCPUUtilization = 80

// metricEntry is one entry of autoscaling.ebb.dev/metrics.
type metricEntry struct {
	Metric       string  `json:"metric"`
	Target       float64 `json:"target,omitempty"`
	AverageValue string  `json:"averageValue,omitempty"`
	Container    string  `json:"container,omitempty"`
}

// metricsAnnotation writes an HPA's metrics as autoscaling.ebb.dev/metrics.
// Ebb's HPA class reads cpu and memory (Resource and ContainerResource
// metrics); Pods, Object and External metrics come from adapters Ebb does
// not read.
func metricsAnnotation(id string, ms []autoscalingv2.MetricSpec) (string, []error) {
	if len(ms) == 0 { // Kubernetes' default
		target := autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(defaultCPUUtilization))}
		ms = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU, Target: target}}}
	}
	var entries []metricEntry
	var errs []error
	for i, m := range ms {
		at := fmt.Sprintf("spec.metrics[%d]", i)
		var e metricEntry
		var err error
		switch {
		case m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil:
			e, err = resourceEntry(at+".resource", m.Resource.Name, m.Resource.Target)
		case m.Type == autoscalingv2.ContainerResourceMetricSourceType && m.ContainerResource != nil:
			e, err = resourceEntry(at+".containerResource", m.ContainerResource.Name, m.ContainerResource.Target)
			e.Container = m.ContainerResource.Container
		default:
			err = fmt.Errorf("%s: type %s: Ebb's HPA class reads cpu and memory (Resource, ContainerResource), and concurrency "+
				"and rps from its queue-proxy, not metrics of an adapter; replace it with one of them, e.g. "+
				`autoscaling.ebb.dev/metrics: '[{"metric": "rps", "target": 50}]' on the pod template, and remove it from the HPA`, at, m.Type)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
			continue
		}
		entries = append(entries, e)
	}
	if len(errs) > 0 {
		return "", errs
	}
	b, err := json.Marshal(entries)
	if err != nil {
		return "", []error{fmt.Errorf("%s: spec.metrics: %w", id, err)}
	}
	return string(b), nil
}

func resourceEntry(at string, name corev1.ResourceName, t autoscalingv2.MetricTarget) (metricEntry, error) {
	if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
		return metricEntry{}, fmt.Errorf("%s.name: %q: Ebb's HPA class reads cpu and memory; use one of them", at, name)
	}
	e := metricEntry{Metric: string(name)}
	switch {
	case t.Type == autoscalingv2.UtilizationMetricType && t.AverageUtilization != nil:
		e.Target = float64(*t.AverageUtilization)
	case t.Type == autoscalingv2.AverageValueMetricType && t.AverageValue != nil:
		e.AverageValue = t.AverageValue.String()
	default:
		return metricEntry{}, fmt.Errorf("%s.target: type %s: a resource metric takes Utilization (averageUtilization) or "+
			"AverageValue (averageValue), as Kubernetes requires; write one of them", at, orNone(string(t.Type)))
	}
	return e, nil
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(none)"
	}
	return s
}

func ptr[T any](v T) *T { return &v }
