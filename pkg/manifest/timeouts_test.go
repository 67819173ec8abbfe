package manifest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

func deploymentWith(containers ...corev1.Container) Deployment {
	d := &appsv1.Deployment{}
	d.Spec.Template.Spec.Containers = containers
	return Deployment{Object: d}
}

func i64(v int64) *int64 { return &v }

// TestDeploymentTimeouts: a Deployment's timeouts are its containers'
// literal variables, the first container that sets each; bad values are
// errors naming the container and the variable.
func TestDeploymentTimeouts(t *testing.T) {
	env := func(kv ...string) []corev1.EnvVar {
		var out []corev1.EnvVar
		for i := 0; i < len(kv); i += 2 {
			out = append(out, corev1.EnvVar{Name: kv[i], Value: kv[i+1]})
		}
		return out
	}
	tests := []struct {
		name    string
		d       Deployment
		want    Timeouts
		wantErr []string
	}{
		{name: "none", d: deploymentWith(corev1.Container{Name: "app"})},
		{name: "the app's", d: deploymentWith(corev1.Container{Name: "app", Env: env("REVISION_TIMEOUT_SECONDS", "900",
			"REVISION_RESPONSE_START_TIMEOUT_SECONDS", "30", "REVISION_IDLE_TIMEOUT_SECONDS", "0")}),
			want: Timeouts{Request: i64(900), ResponseStart: i64(30), Idle: i64(0)}},
		{name: "the sidecar's of a long form", d: deploymentWith(corev1.Container{Name: "app"},
			corev1.Container{Name: "queue-proxy", Env: env("REVISION_IDLE_TIMEOUT_SECONDS", "120")}),
			want: Timeouts{Idle: i64(120)}},
		{name: "the first container's wins", d: deploymentWith(corev1.Container{Name: "app", Env: env("REVISION_TIMEOUT_SECONDS", "60")},
			corev1.Container{Name: "queue-proxy", Env: env("REVISION_TIMEOUT_SECONDS", "60")}),
			want: Timeouts{Request: i64(60)}},
		{name: "from the downward API: not known here", d: deploymentWith(corev1.Container{Name: "app", Env: []corev1.EnvVar{
			{Name: "REVISION_TIMEOUT_SECONDS", ValueFrom: &corev1.EnvVarSource{}}}})},
		{name: "bad values", d: deploymentWith(corev1.Container{Name: "app"}, corev1.Container{Name: "qp",
			Env: env("REVISION_TIMEOUT_SECONDS", "0", "REVISION_IDLE_TIMEOUT_SECONDS", "1.5")}),
			wantErr: []string{`spec.template.spec.containers[1].env: REVISION_TIMEOUT_SECONDS="0": Ebb reads whole seconds within [1, 3600]`,
				`spec.template.spec.containers[1].env: REVISION_IDLE_TIMEOUT_SECONDS="1.5": Ebb reads whole seconds within [0, 3600]`}},
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
	for _, want := range []Timeouts{{}, {Request: i64(900)}, {Request: i64(900), ResponseStart: i64(30), Idle: i64(120)}, {Idle: i64(0)}} {
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
// panics, reads only values within the queue-proxy's range, and what it
// reads writes back (Env) to the same.
func FuzzDeploymentTimeouts(f *testing.F) {
	for _, v := range []string{"300", "0", "3600", "3601", "1.5", "-1", "", " 30", "1e3"} {
		f.Add(v, v)
	}
	f.Fuzz(func(t *testing.T, request, idle string) {
		d := deploymentWith(corev1.Container{Name: "app", Env: []corev1.EnvVar{
			{Name: "REVISION_TIMEOUT_SECONDS", Value: request}, {Name: "REVISION_IDLE_TIMEOUT_SECONDS", Value: idle}}})
		got, err := d.Timeouts()
		for _, v := range []*int64{got.Request, got.Idle} {
			if v != nil && (*v < 0 || *v > maxTimeoutSeconds) {
				t.Fatalf("read %d, outside [0, %d]", *v, maxTimeoutSeconds)
			}
		}
		if got.Request != nil && *got.Request == 0 {
			t.Fatal("read a request timeout of 0")
		}
		if err == nil && (got.Request == nil || got.Idle == nil) {
			t.Fatalf("no error, but %q and %q not both read", request, idle)
		}
		again, err2 := deploymentWith(corev1.Container{Name: "app", Env: got.Env()}).Timeouts()
		if err2 != nil || !cmp.Equal(got, again) {
			t.Fatalf("written back: %+v, %v; want %+v", again, err2, got)
		}
	})
}
