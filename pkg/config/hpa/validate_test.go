package hpa

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"ebb.dev/ebb/pkg/fielderr"
)

func TestValidateBehavior(t *testing.T) {
	valid := func() *autoscalingv2.HorizontalPodAutoscalerBehavior {
		return DefaultBehavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{})
	}
	with := func(edit func(b *autoscalingv2.HorizontalPodAutoscalerBehavior)) *autoscalingv2.HorizontalPodAutoscalerBehavior {
		b := valid()
		edit(b)
		return b
	}
	tests := []struct {
		name string
		in   *autoscalingv2.HorizontalPodAutoscalerBehavior
		want []string // the fields at fault, in order
	}{
		{"nil", nil, nil},
		{"empty (not defaulted) has no rules to break", &autoscalingv2.HorizontalPodAutoscalerBehavior{}, nil},
		{"defaults", valid(), nil},
		{"window 0 and 3600 are valid", with(func(b *autoscalingv2.HorizontalPodAutoscalerBehavior) {
			b.ScaleUp.StabilizationWindowSeconds, b.ScaleDown.StabilizationWindowSeconds = ptr(int32(0)), ptr(int32(3600))
		}), nil},
		{"window -1 and 3601", with(func(b *autoscalingv2.HorizontalPodAutoscalerBehavior) {
			b.ScaleUp.StabilizationWindowSeconds, b.ScaleDown.StabilizationWindowSeconds = ptr(int32(-1)), ptr(int32(3601))
		}), []string{"scaleUp.stabilizationWindowSeconds", "scaleDown.stabilizationWindowSeconds"}},
		{"selectPolicy", with(func(b *autoscalingv2.HorizontalPodAutoscalerBehavior) {
			b.ScaleUp.SelectPolicy = ptr(autoscalingv2.ScalingPolicySelect("max"))
		}), []string{"scaleUp.selectPolicy"}},
		{"Disabled is valid", with(func(b *autoscalingv2.HorizontalPodAutoscalerBehavior) {
			b.ScaleDown.SelectPolicy = ptr(autoscalingv2.DisabledPolicySelect)
		}), nil},
		{"no policy, even with Disabled", with(func(b *autoscalingv2.HorizontalPodAutoscalerBehavior) {
			b.ScaleDown.SelectPolicy = ptr(autoscalingv2.DisabledPolicySelect)
			b.ScaleDown.Policies = []autoscalingv2.HPAScalingPolicy{}
		}), []string{"scaleDown.policies"}},
		{"policy type, value, period", with(func(b *autoscalingv2.HorizontalPodAutoscalerBehavior) {
			b.ScaleUp.Policies = []autoscalingv2.HPAScalingPolicy{{Type: "pods", Value: 0, PeriodSeconds: 0}}
		}), []string{"scaleUp.policies[0].type", "scaleUp.policies[0].value", "scaleUp.policies[0].periodSeconds"}},
		{"period 1 and 1800 are valid", with(func(b *autoscalingv2.HorizontalPodAutoscalerBehavior) {
			b.ScaleUp.Policies = []autoscalingv2.HPAScalingPolicy{podsPolicy(1, 1), percentPolicy(1, 1800)}
		}), nil},
		{"period 1801, value -5", with(func(b *autoscalingv2.HorizontalPodAutoscalerBehavior) {
			b.ScaleDown.Policies = []autoscalingv2.HPAScalingPolicy{podsPolicy(4, 15), percentPolicy(-5, 1801)}
		}), []string{"scaleDown.policies[1].value", "scaleDown.policies[1].periodSeconds"}},
		{"tolerance 0 and 10 are valid", with(func(b *autoscalingv2.HorizontalPodAutoscalerBehavior) {
			b.ScaleUp.Tolerance, b.ScaleDown.Tolerance = quantity("0"), quantity("10")
		}), nil},
		{"negative tolerance", with(func(b *autoscalingv2.HorizontalPodAutoscalerBehavior) {
			b.ScaleDown.Tolerance = quantity("-0.1")
		}), []string{"scaleDown.tolerance"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateBehavior(tc.in)
			if diff := cmp.Diff(tc.want, fieldsOf(t, err)); diff != "" {
				t.Errorf("ValidateBehavior() fields mismatch (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}

// fieldsOf lists the Field of every FieldError joined in err, checking that
// each text names the field, the value, the rule and a fix.
func fieldsOf(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var fields []string
	for _, e := range fielderr.Errors(err) {
		var fe *FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("error %q is not a *FieldError", e)
		}
		text := e.Error()
		for _, part := range []string{fe.Field, " = " + fe.FieldValue + ": ", fe.Rule, "; fix: " + fe.Fix} {
			if fe.Rule == "" || fe.Fix == "" || !strings.Contains(text, part) {
				t.Errorf("error %q does not carry %q", text, part)
			}
		}
		fields = append(fields, fe.Field)
	}
	return fields
}
