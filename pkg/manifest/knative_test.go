package manifest

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func ptr[T any](v T) *T { return &v }

// TestKnativeServiceEveryField: every field Ebb reads lands where the
// Deployment path reads it.
func TestKnativeServiceEveryField(t *testing.T) {
	in := `apiVersion: serving.knative.dev/v1
kind: Service
metadata:
  name: grpc-ping
  namespace: apps
  labels: {team: a}
  annotations: {note: kept}
spec:
  template:
    metadata:
      labels: {tier: web}
      annotations:
        autoscaling.knative.dev/target: "10"
        autoscaling.ebb.dev/load-balancing: round-robin
    spec:
      containerConcurrency: 20
      timeoutSeconds: 120
      responseStartTimeoutSeconds: 30
      idleTimeoutSeconds: 60
      serviceAccountName: pinger
      containers:
        - image: ghcr.io/knative/grpc-ping-go
          command: ["/ping"]
          args: ["--verbose"]
          env: [{name: GREETING, value: hi}]
          ports: [{name: h2c, containerPort: 9000}]
          resources: {requests: {cpu: 100m, memory: 64Mi}}
          readinessProbe: {httpGet: {path: /healthz}}
`
	s, err := Decode("s.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Deployments) != 1 || len(s.Ignored) != 0 {
		t.Fatalf("got %d Deployments, %d ignored; want 1, 0", len(s.Deployments), len(s.Ignored))
	}
	d := s.Deployments[0]
	want := &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "grpc-ping", Namespace: "apps",
			Labels: map[string]string{"team": "a", "autoscaling.ebb.dev/enabled": "true"}, Annotations: map[string]string{"note": "kept"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(0)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{labelKnativeService: "grpc-ping"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels: map[string]string{"tier": "web", labelKnativeService: "grpc-ping"},
					Annotations: map[string]string{"autoscaling.knative.dev/target": "10",
						"autoscaling.ebb.dev/load-balancing": "round-robin", "autoscaling.ebb.dev/container-concurrency": "20"},
				},
				Spec: corev1.PodSpec{
					ServiceAccountName: "pinger",
					Containers: []corev1.Container{{
						Name: "user-container", Image: "ghcr.io/knative/grpc-ping-go", Command: []string{"/ping"}, Args: []string{"--verbose"},
						Env:   []corev1.EnvVar{{Name: "GREETING", Value: "hi"}, {Name: "PORT", Value: "9000"}},
						Ports: []corev1.ContainerPort{{Name: "h2c", ContainerPort: 9000}},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
							HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(9000)}}},
					}},
				},
			},
		},
	}
	if diff := cmp.Diff(want, d.Object); diff != "" {
		t.Errorf("Deployment (-want +got):\n%s", diff)
	}
	wantKn := &Knative{Kind: "Service", Timeouts: Timeouts{Request: ptr(120 * time.Second), ResponseStart: ptr(30 * time.Second), Idle: ptr(time.Minute)}}
	if diff := cmp.Diff(wantKn, d.Knative); diff != "" {
		t.Errorf("Knative (-want +got):\n%s", diff)
	}
	if d.Kind() != "Knative Service" || d.Namespace() != "apps" || d.Name() != "grpc-ping" {
		t.Errorf("Kind/Namespace/Name = %s %s %s", d.Kind(), d.Namespace(), d.Name())
	}
}

// TestKnativeDefaults: the smallest Service (helloworld-go) gets Knative's
// port 8080 as PORT, the default namespace, and no timeouts.
func TestKnativeDefaults(t *testing.T) {
	in := `{"apiVersion": "serving.knative.dev/v1", "kind": "Configuration", "metadata": {"name": "hello"},
"spec": {"template": {"spec": {"containers": [{"image": "x", "readinessProbe": {"tcpSocket": {}}}]}}}}`
	s, err := Decode("c.json", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	d := s.Deployments[0]
	c := d.Object.Spec.Template.Spec.Containers[0]
	if diff := cmp.Diff([]corev1.EnvVar{{Name: "PORT", Value: "8080"}}, c.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]corev1.ContainerPort{{ContainerPort: 8080}}, c.Ports); diff != "" {
		t.Errorf("ports (-want +got):\n%s", diff)
	}
	if c.ReadinessProbe.TCPSocket.Port != intstr.FromInt32(8080) {
		t.Errorf("tcp probe port = %v, want 8080", c.ReadinessProbe.TCPSocket.Port)
	}
	if diff := cmp.Diff(map[string]string{labelKnativeConfiguration: "hello"}, d.Object.Spec.Selector.MatchLabels); diff != "" {
		t.Errorf("selector (-want +got):\n%s", diff)
	}
	if d.Namespace() != "default" || d.Knative.Kind != "Configuration" || d.Knative.Timeouts != (Timeouts{}) {
		t.Errorf("namespace %q, knative %+v", d.Namespace(), d.Knative)
	}
	if len(d.Knative.Errors)+len(d.Knative.Warnings) > 0 {
		t.Errorf("errors %q, warnings %q; want none", d.Knative.Errors, d.Knative.Warnings)
	}
}

// TestKnativeRefusals: everything Ebb cannot honour is an error naming
// the field; what it reads differently is a warning naming the field.
func TestKnativeRefusals(t *testing.T) {
	tests := []struct {
		name         string
		meta, spec   string // YAML under metadata (after name) and under spec (after template)
		tmplMeta     string // YAML under spec.template.metadata
		revSpec      string // YAML under spec.template.spec (before containers)
		container    string // YAML lines of the first container (after image)
		more         string // more containers
		wantErrors   []string
		wantWarnings []string
	}{
		{name: "default traffic is fine", spec: "  traffic: [{latestRevision: true, percent: 100}]\n"},
		{name: "traffic split", spec: "  traffic:\n  - {latestRevision: true, percent: 90}\n  - {revisionName: hello-v1, percent: 10, tag: old}\n",
			wantErrors: []string{"spec.traffic[0].percent: 90:", "spec.traffic[1].tag: \"old\":", "spec.traffic[1].revisionName: \"hello-v1\":",
				"spec.traffic[1].percent: 10:"}},
		{name: "not the latest", spec: "  traffic: [{latestRevision: false, revisionName: a}]\n",
			wantErrors: []string{"spec.traffic[0].revisionName: \"a\":", "spec.traffic[0].latestRevision: false:"}},
		{name: "two containers", more: "      - {name: side, image: z}\n",
			wantErrors: []string{`spec.template.spec.containers[1]: "side": Ebb runs one container`}},
		{name: "two ports", container: "        ports: [{containerPort: 1}, {containerPort: 2}]\n",
			wantErrors: []string{"spec.template.spec.containers[0].ports: 2 ports:"}},
		{name: "port name", container: "        ports: [{name: grpc, containerPort: 1}]\n",
			wantErrors: []string{`spec.template.spec.containers[0].ports[0].name: "grpc": must be http1 or h2c`}},
		{name: "PORT reserved", container: "        env: [{name: PORT, value: \"1\"}]\n",
			wantErrors: []string{"spec.template.spec.containers[0].env[0]: PORT is reserved"}},
		{name: "timeouts out of range", revSpec: "      timeoutSeconds: 0\n      responseStartTimeoutSeconds: 301\n      idleTimeoutSeconds: -1\n",
			wantErrors: []string{"spec.template.spec.timeoutSeconds: 0: must be a number of seconds within [0.001, 3600] (the queue-proxy's REVISION_TIMEOUT_SECONDS)",
				"spec.template.spec.idleTimeoutSeconds: -1: must be 0 (none) or a number of seconds within [0.001, 3600]",
				"spec.template.spec.responseStartTimeoutSeconds: 301: must not exceed the request timeout (timeoutSeconds, 5m0s)"}},
		{name: "idle above the request timeout", revSpec: "      timeoutSeconds: 10\n      idleTimeoutSeconds: 11\n",
			wantErrors: []string{"spec.template.spec.idleTimeoutSeconds: 11: must not exceed the request timeout (timeoutSeconds, 10s)"}},
		{name: "containerConcurrency out of range", revSpec: "      containerConcurrency: 1001\n",
			wantErrors: []string{"spec.template.spec.containerConcurrency: 1001: must be within [0, 1000]"}},
		{name: "containerConcurrency and a different annotation", revSpec: "      containerConcurrency: 5\n",
			tmplMeta:   "      annotations: {autoscaling.ebb.dev/container-concurrency: \"6\"}\n",
			wantErrors: []string{`spec.template.spec.containerConcurrency: 5, but the annotation autoscaling.ebb.dev/container-concurrency is "6"`}},
		{name: "containerConcurrency and the same annotation", revSpec: "      containerConcurrency: 5\n",
			tmplMeta: "      annotations: {autoscaling.ebb.dev/container-concurrency: \"5\"}\n"},
		{name: "autoscaling annotation on the Service", meta: "  annotations: {autoscaling.knative.dev/min-scale: \"1\"}\n",
			wantErrors: []string{`metadata.annotations["autoscaling.knative.dev/min-scale"]: a revision's autoscaling settings`}},
		{name: "warnings", meta: "  labels: {networking.knative.dev/visibility: cluster-local}\n" +
			"  annotations: {serving.knative.dev/creator: me, serving.knative.dev/rollout-duration: 60s}\n",
			tmplMeta: "      name: hello-v2\n      annotations: {features.knative.dev/queueproxy-podinfo: enabled, " +
				"serving.knative.dev/progress-deadline: 60s}\n",
			wantWarnings: []string{`metadata.annotations["serving.knative.dev/rollout-duration"]: Knative's annotation has no effect`,
				`metadata.labels["networking.knative.dev/visibility"]: Knative's label has no effect`,
				`spec.template.metadata.name: the revision name "hello-v2" is not used`,
				`spec.template.metadata.annotations["features.knative.dev/queueproxy-podinfo"]: Knative's annotation has no effect`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := "apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata:\n  name: hello\n" + tt.meta +
				"spec:\n  template:\n    metadata:\n" + tt.tmplMeta + "    spec:\n" + tt.revSpec +
				"      containers:\n      - image: x\n" + tt.container + tt.more + tt.spec
			s, err := Decode("k.yaml", []byte(in))
			if err != nil {
				t.Fatalf("%v\n%s", err, in)
			}
			kn := s.Deployments[0].Knative
			checkPrefixes(t, "errors", tt.wantErrors, kn.Errors)
			checkPrefixes(t, "warnings", tt.wantWarnings, kn.Warnings)
		})
	}
}

// checkPrefixes: got has one line per want, in order, each starting with
// it.
func checkPrefixes(t *testing.T, what string, want, got []string) {
	t.Helper()
	if len(want) != len(got) {
		t.Errorf("%s: got %d, want %d:\n%s", what, len(got), len(want), strings.Join(got, "\n"))
		return
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("%s[%d] = %q; want prefix %q", what, i, got[i], want[i])
		}
	}
}

// TestKnativeDocumentErrors: what Knative's API server would reject fails
// the document, naming the field.
func TestKnativeDocumentErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "old version", in: "apiVersion: serving.knative.dev/v1alpha1\nkind: Service\nmetadata: {name: a}\n",
			want: `Knative Service has apiVersion "serving.knative.dev/v1alpha1"; want serving.knative.dev/v1`},
		{name: "no name", in: "apiVersion: serving.knative.dev/v1\nkind: Service\nspec: {template: {spec: {containers: [{image: x}]}}}\n",
			want: "serving.knative.dev/v1 Service: metadata.name is required"},
		{name: "no template", in: "apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: a}\n",
			want: "serving.knative.dev/v1 Service: spec.template is required"},
		{name: "no container", in: "apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: a}\nspec: {template: {spec: {}}}\n",
			want: "serving.knative.dev/v1 Service: spec.template.spec.containers is required"},
		{name: "unknown field", in: "apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: a}\n" +
			"spec: {template: {spec: {containerConcurency: 1, containers: [{image: x}]}}}\n",
			want: `serving.knative.dev/v1 Service: unknown field "containerConcurency"`},
		{name: "configuration with traffic", in: "apiVersion: serving.knative.dev/v1\nkind: Configuration\nmetadata: {name: a}\n" +
			"spec: {template: {spec: {containers: [{image: x}]}}, traffic: [{percent: 100}]}\n",
			want: `serving.knative.dev/v1 Configuration: unknown field "spec.traffic"`},
		{name: "v1 HPA without name", in: "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nspec: {maxReplicas: 3}\n",
			want: "autoscaling/v1 HorizontalPodAutoscaler: metadata.name is required"},
		{name: "HPA of an unknown version", in: "apiVersion: autoscaling/v2beta2\nkind: HorizontalPodAutoscaler\nmetadata: {name: a}\n",
			want: `HorizontalPodAutoscaler has apiVersion "autoscaling/v2beta2"; want autoscaling/v2 or autoscaling/v1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode("e.yaml", []byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v; want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestKnativeOtherKindsIgnored: a core v1 Service and Knative kinds Ebb
// does not read are ignored, not refused.
func TestKnativeOtherKindsIgnored(t *testing.T) {
	in := "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n---\napiVersion: serving.knative.dev/v1\nkind: Route\nmetadata: {name: r}\n"
	s, err := Decode("i.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Ignored) != 2 || len(s.Deployments) != 0 || string(s.Ignored[0].JSON) == "" {
		t.Errorf("got %+v", s)
	}
}

// TestHPAVersions: a v1 HPA reads as the API server converts it to v2.
func TestHPAVersions(t *testing.T) {
	in := `apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: php-apache}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: php-apache}
  minReplicas: 1
  maxReplicas: 10
  targetCPUUtilizationPercentage: 50
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: php-apache, namespace: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: php-apache}
  minReplicas: 1
  maxReplicas: 10
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
`
	s, err := Decode("h.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.HPAs) != 2 {
		t.Fatalf("%d HPAs, want 2", len(s.HPAs))
	}
	v1, v2 := s.HPAs[0], s.HPAs[1]
	if v1.APIVersion != "autoscaling/v1" || v2.APIVersion != "autoscaling/v2" || v1.Namespace() != "default" || v2.Namespace() != "web" {
		t.Errorf("versions %s %s, namespaces %s %s", v1.APIVersion, v2.APIVersion, v1.Namespace(), v2.Namespace())
	}
	if diff := cmp.Diff(v2.Object.Spec, v1.Object.Spec); diff != "" {
		t.Errorf("v1 converted (-v2 +v1):\n%s", diff)
	}
}
