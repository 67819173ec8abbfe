package hpa

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

func TestParseBehavior(t *testing.T) {
	defaults := DefaultBehavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{})
	fastDown := DefaultBehavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleDown: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: ptr(int32(60)),
			Policies:                   []autoscalingv2.HPAScalingPolicy{podsPolicy(2, 30)},
			Tolerance:                  quantity("0.05"),
		},
	})
	tests := []struct {
		name string
		in   string
		want *autoscalingv2.HorizontalPodAutoscalerBehavior
	}{
		{"empty object: Kubernetes' defaults", "{}", defaults},
		{"null: no behavior (legacy path)", "null", nil},
		{"json", `{"scaleDown": {"stabilizationWindowSeconds": 60, "policies": [{"type": "Pods", "value": 2, "periodSeconds": 30}], "tolerance": "0.05"}}`, fastDown},
		{"yaml", "scaleDown:\n  stabilizationWindowSeconds: 60\n  policies:\n  - type: Pods\n    value: 2\n    periodSeconds: 30\n  tolerance: 0.05\n", fastDown},
		{"yaml flow style", "scaleDown: {stabilizationWindowSeconds: 60, policies: [{type: Pods, value: 2, periodSeconds: 30}], tolerance: 50m}", fastDown},
		{"policies: null gets the defaults", `{"scaleUp": {"policies": null}}`, defaults},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseBehavior(tc.in)
			if err != nil {
				t.Fatalf("ParseBehavior(%q) error: %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseBehavior(%q) mismatch (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestParseBehaviorErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // each must appear in the error text
	}{
		{"empty", "", []string{"is empty", "remove the annotation"}},
		{"blank", "  \n", []string{"is empty"}},
		{"not yaml", "{scaleUp: [", []string{"is not valid JSON or YAML"}},
		{"not an object", "[1, 2]", []string{"must be an object"}},
		{"a string", "fast", []string{"must be an object"}},
		{"unknown top-level field", `{"scaleUP": {}}`, []string{`scaleUP = {}: unknown field`, `did you mean "scaleUp"?`}},
		{"misspelt nested field", "scaleDown:\n  policies:\n  - type: Pods\n    value: 1\n    periodSecond: 15\n",
			[]string{"scaleDown.policies[0].periodSecond = 15: unknown field", `did you mean "periodSeconds"?`}},
		{"unrelated field lists the known ones", `{"scaleUp": {"cooldown": 30}}`,
			[]string{"scaleUp.cooldown = 30: unknown field", "use one of policies, selectPolicy, stabilizationWindowSeconds, tolerance"}},
		{"all unknown fields at once", `{"a": 1, "scaleUp": {"b": 2}}`, []string{"a = 1: unknown field", "scaleUp.b = 2: unknown field"}},
		{"duplicate key", "scaleUp: {}\nscaleUp: {}\n", []string{"is not valid JSON or YAML", "already set"}},
		{"wrong type", `{"scaleUp": {"stabilizationWindowSeconds": "60s"}}`, []string{"stabilizationWindowSeconds = a string: must be int32"}},
		{"fractional seconds", `{"scaleUp": {"stabilizationWindowSeconds": 1.5}}`, []string{"must be int32"}},
		{"bad tolerance", `{"scaleUp": {"tolerance": "ten percent"}}`, []string{"cannot be decoded", "tolerance as a quantity"}},
		{"validation, all at once", `{"scaleUp": {"stabilizationWindowSeconds": 4000, "selectPolicy": "Fastest"}, "scaleDown": {"policies": []}}`,
			[]string{"scaleUp.stabilizationWindowSeconds = 4000: must be within [0, 3600]", `scaleUp.selectPolicy = "Fastest"`,
				"scaleDown.policies = []: must specify at least one policy"}},
		{"too big", "{" + strings.Repeat(" ", maxBehaviorBytes) + "}", []string{"more than the 32768"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseBehavior(tc.in)
			if err == nil {
				t.Fatalf("ParseBehavior(%q) = %+v, want an error", tc.in, got)
			}
			text := err.Error()
			for _, w := range append(tc.want, "annotation autoscaling.ebb.dev/behavior: ") {
				if !strings.Contains(text, w) {
					t.Errorf("error %q does not contain %q", text, w)
				}
			}
			for _, line := range strings.Split(text, "\n") {
				if !strings.HasPrefix(line, "annotation "+AnnotationBehavior+": ") {
					t.Errorf("error line %q does not name the annotation", line)
				}
			}
		})
	}
}
