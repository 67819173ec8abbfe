package manifest

import (
	"errors"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// HPA is a decoded Kubernetes HorizontalPodAutoscaler, autoscaling/v2 or
// autoscaling/v1 (converted to v2 as the API server does: a v1 CPU target
// is a v2 Resource metric). Ebb does not run HPA objects; `autoscaler
// convert` turns one and the Deployment it targets into an Ebb revision.
type HPA struct {
	Origin     Origin
	APIVersion string // as written: autoscaling/v2 or autoscaling/v1
	Object     *autoscalingv2.HorizontalPodAutoscaler
}

// Namespace is the HPA's namespace, DefaultNamespace when unset.
func (h HPA) Namespace() string { return namespaceOr(h.Object.Namespace) }

// Name is the HPA's name (never empty: Decode requires it).
func (h HPA) Name() string { return h.Object.Name }

func (s *Set) addHPA(o Origin, tm typeMeta, js []byte) error {
	var h *autoscalingv2.HorizontalPodAutoscaler
	switch tm.APIVersion {
	case "autoscaling/v2":
		h = &autoscalingv2.HorizontalPodAutoscaler{}
		if err := decodeStrict(js, h); err != nil {
			return fmt.Errorf("autoscaling/v2 HorizontalPodAutoscaler: %w", err)
		}
	case "autoscaling/v1":
		v1 := &autoscalingv1.HorizontalPodAutoscaler{}
		if err := decodeStrict(js, v1); err != nil {
			return fmt.Errorf("autoscaling/v1 HorizontalPodAutoscaler: %w", err)
		}
		h = hpaV1ToV2(v1)
	default:
		return fmt.Errorf("HorizontalPodAutoscaler has apiVersion %q; want autoscaling/v2 or autoscaling/v1", tm.APIVersion)
	}
	if h.Name == "" {
		return errors.New(tm.APIVersion + " HorizontalPodAutoscaler: metadata.name is required")
	}
	s.HPAs = append(s.HPAs, HPA{Origin: o, APIVersion: tm.APIVersion, Object: h})
	return nil
}

// hpaV1ToV2 is the API server's conversion: targetCPUUtilizationPercentage
// becomes a cpu Resource metric with a Utilization target; none stays none
// (the controller's default, 80% cpu, applies to both).
func hpaV1ToV2(v1 *autoscalingv1.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscaler {
	h := &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   v1.TypeMeta,
		ObjectMeta: v1.ObjectMeta,
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: v1.Spec.ScaleTargetRef.Kind,
				Name: v1.Spec.ScaleTargetRef.Name, APIVersion: v1.Spec.ScaleTargetRef.APIVersion},
			MinReplicas: v1.Spec.MinReplicas,
			MaxReplicas: v1.Spec.MaxReplicas,
		},
	}
	h.APIVersion = "autoscaling/v2"
	if p := v1.Spec.TargetCPUUtilizationPercentage; p != nil {
		h.Spec.Metrics = []autoscalingv2.MetricSpec{{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: p}},
		}}
	}
	return h
}
