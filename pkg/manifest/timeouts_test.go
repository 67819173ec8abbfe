package manifest

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"ebb.dev/ebb/pkg/config"
)

func deploymentWith(containers ...corev1.Container) Deployment {
	d := &appsv1.Deployment{}
	d.Spec.Template.Spec.Containers = containers
	return Deployment{Object: d}
}

func secs(v float64) *time.Duration { d := time.Duration(v * float64(time.Second)); return &d }

func env(kv ...string) []corev1.EnvVar {
	var out []corev1.EnvVar
	for i := 0; i < len(kv); i += 2 {
		out = append(out, corev1.EnvVar{Name: kv[i], Value: kv[i+1]})
	}
	return out
}

// TestDeploymentTimeouts: a Deployment's timeouts are its containers'
// variables, the first container that sets each, each read by the
// queue-proxy's rule; bad values are errors naming the container, the
// variable, the value, the rule and the fix.
func TestDeploymentTimeouts(t *testing.T) {
	tests := []struct {
		name    string
		d       Deployment
		want    Timeouts
		wantErr []string
	}{
		{name: "none", d: deploymentWith(corev1.Container{Name: "app"})},
		{name: "the app's", d: deploymentWith(corev1.Container{Name: "app", Env: env("REVISION_TIMEOUT_SECONDS", "900",
			"REVISION_RESPONSE_START_TIMEOUT_SECONDS", "30", "REVISION_IDLE_TIMEOUT_SECONDS", "0")}),
			want: Timeouts{Request: secs(900), ResponseStart: secs(30), Idle: secs(0)}},
		{name: "fractions, as the queue-proxy takes them", d: deploymentWith(corev1.Container{Name: "app",
			Env: env("REVISION_TIMEOUT_SECONDS", "0.5", "REVISION_IDLE_TIMEOUT_SECONDS", "0.25")}),
			want: Timeouts{Request: secs(0.5), Idle: secs(0.25)}},
		{name: "the sidecar's of a long form", d: deploymentWith(corev1.Container{Name: "app"},
			corev1.Container{Name: "queue-proxy", Env: env("REVISION_IDLE_TIMEOUT_SECONDS", "120")}),
			want: Timeouts{Idle: secs(120)}},
		{name: "the first container's wins", d: deploymentWith(corev1.Container{Name: "app", Env: env("REVISION_TIMEOUT_SECONDS", "60")},
			corev1.Container{Name: "queue-proxy", Env: env("REVISION_TIMEOUT_SECONDS", "90")}),
			want: Timeouts{Request: secs(60)}},
		{name: "a name defined twice: the last, as the kubelet", d: deploymentWith(corev1.Container{Name: "app",
			Env: env("REVISION_TIMEOUT_SECONDS", "60", "REVISION_TIMEOUT_SECONDS", "90")}),
			want: Timeouts{Request: secs(90)}},
		{name: "from valueFrom: refused", d: deploymentWith(corev1.Container{Name: "app", Env: []corev1.EnvVar{
			{Name: "REVISION_TIMEOUT_SECONDS", ValueFrom: &corev1.EnvVarSource{}}}}),
			wantErr: []string{"spec.template.spec.containers[0].env: REVISION_TIMEOUT_SECONDS is set through valueFrom, " +
				"but Ebb reads it when the pod is created (the grace period, the activator's timeout): write the number of seconds as its value"}},
		{name: "bad values", d: deploymentWith(corev1.Container{Name: "app"}, corev1.Container{Name: "qp",
			Env: env("REVISION_TIMEOUT_SECONDS", "NaN", "REVISION_IDLE_TIMEOUT_SECONDS", "1e-300")}),
			wantErr: []string{`spec.template.spec.containers[1].env: environment variable "REVISION_TIMEOUT_SECONDS" = "NaN": ` +
				`must be a number of seconds within [0.001, 3600]; write a number of seconds in that range, e.g. "30", or remove the variable (default: 300s)`,
				`spec.template.spec.containers[1].env: environment variable "REVISION_IDLE_TIMEOUT_SECONDS" = "1e-300": must be 0 (none) or`}},
		{name: "idle above the request timeout", d: deploymentWith(corev1.Container{Name: "app",
			Env: env("REVISION_TIMEOUT_SECONDS", "10", "REVISION_IDLE_TIMEOUT_SECONDS", "11")}),
			want:    Timeouts{Request: secs(10), Idle: secs(11)},
			wantErr: []string{`"REVISION_IDLE_TIMEOUT_SECONDS" = "11": must not exceed REVISION_TIMEOUT_SECONDS (10)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.d.Timeouts()
			var lines []string
			if err != nil {
				lines = strings.Split(err.Error(), "\n")
			}
			if len(lines) != len(tt.wantErr) {
				t.Fatalf("errors %q, want %d", lines, len(tt.wantErr))
			}
			for i, w := range tt.wantErr {
				if !strings.Contains(lines[i], w) {
					t.Errorf("error %d = %q, want it to contain %q", i, lines[i], w)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("timeouts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTimeoutsEnvRoundTrip: a Knative revision's timeouts written as the
// app's environment read back the same.
func TestTimeoutsEnvRoundTrip(t *testing.T) {
	for _, want := range []Timeouts{{}, {Request: secs(900)}, {Request: secs(900), ResponseStart: secs(30), Idle: secs(120)},
		{Idle: secs(0)}, {Request: secs(0.3)}} {
		got, err := deploymentWith(corev1.Container{Name: "app", Env: want.Env()}).Timeouts()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("timeouts (-written +read):\n%s", diff)
		}
	}
}

// FuzzDeploymentTimeouts: whatever the variables hold, Timeouts never
// panics, reads exactly what the queue-proxy's rule reads, and what it
// reads writes back (Env) to the same.
func FuzzDeploymentTimeouts(f *testing.F) {
	for _, v := range []string{"300", "0", "3600", "3601", "1.5", "-1", "", " 30", "1e3", "NaN", "1e-300"} {
		f.Add(v, v)
	}
	f.Fuzz(func(t *testing.T, request, idle string) {
		d := deploymentWith(corev1.Container{Name: "app", Env: env("REVISION_TIMEOUT_SECONDS", request, "REVISION_IDLE_TIMEOUT_SECONDS", idle)})
		got, _ := d.Timeouts()
		for _, c := range []struct {
			env, raw string
			v        *time.Duration
		}{{config.EnvRevisionTimeout, request, got.Request}, {config.EnvIdleTimeout, idle, got.Idle}} {
			want, err := config.ParseTimeoutSeconds(c.env, c.raw)
			if (err == nil) != (c.v != nil) || c.v != nil && *c.v != want {
				t.Fatalf("%s=%q read as %v; the rule gives %v, %v", c.env, c.raw, c.v, want, err)
			}
		}
		again, _ := deploymentWith(corev1.Container{Name: "app", Env: got.Env()}).Timeouts()
		if !cmp.Equal(got, again) {
			t.Fatalf("written back: %+v; want %+v", again, got)
		}
	})
}
