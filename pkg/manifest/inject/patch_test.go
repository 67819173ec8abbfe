package inject

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"ebb.dev/ebb/internal/golden"
	"ebb.dev/ebb/pkg/manifest/inject/injecttest"
)

// testSettings are deploy/'s settings with a fixed image.
func testSettings() Settings { return DefaultSettings("ebb.dev/queueproxy:dev") }

func readPod(t *testing.T, path string) *corev1.Pod {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(raw, &pod); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &pod
}

// goldenPatch is what a golden file holds: the patch and the warnings.
type goldenPatch struct {
	Patch    []Operation `json:"patch"`
	Warnings []string    `json:"warnings"`
}

// TestGoldenPatches: each pod of testdata gives the patch of its
// .patch.json (rewrite with -update and review the diff); the patched pod
// has one queue-proxy, and injecting it again changes nothing.
func TestGoldenPatches(t *testing.T) {
	pods, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(pods) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, path := range pods {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			pod := readPod(t, path)
			res, err := Pod(Input{Pod: pod}, testSettings())
			if err != nil {
				t.Fatalf("Pod: %v", err)
			}
			got, err := json.MarshalIndent(goldenPatch{Patch: res.Patch, Warnings: res.Warnings}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			goldenPath := strings.TrimSuffix(path, ".yaml") + ".patch.json"
			golden.Check(t, goldenPath, got)
			patched := apply(t, pod, res.Patch)
			if n := countSidecars(patched); n != 1 {
				t.Errorf("patched pod has %d queue-proxy containers, want 1", n)
			}
			app, _ := appContainer(pod.Spec.Containers)
			if diff := cmp.Diff(injecttest.Problems(pod), injecttest.Problems(patched)); diff != "" {
				t.Errorf("problems (-before +after):\n%s", diff)
			}
			if p := injecttest.Sidecar(patched, app); len(res.Patch) > 0 && len(p) > 0 {
				t.Errorf("sidecar: %q", p)
			}
			again, err := Pod(Input{Pod: patched}, testSettings())
			if err != nil || len(again.Patch) != 0 {
				t.Errorf("second injection: patch %v, error %v; want nothing to do", again.Patch, err)
			}
		})
	}
}

// apply applies a patch as the API server does and decodes the result.
func apply(t *testing.T, pod *corev1.Pod, ops []Operation) *corev1.Pod {
	t.Helper()
	if len(ops) == 0 {
		return pod
	}
	doc, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	rawOps, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	p, err := jsonpatch.DecodePatch(rawOps)
	if err != nil {
		t.Fatalf("decode patch: %v", err)
	}
	out, err := p.Apply(doc)
	if err != nil {
		t.Fatalf("apply patch: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	var patched corev1.Pod
	if err := dec.Decode(&patched); err != nil {
		t.Fatalf("decode patched pod: %v", err)
	}
	return &patched
}

func countSidecars(pod *corev1.Pod) int {
	n := 0
	for _, c := range pod.Spec.Containers {
		if c.Name == ContainerName {
			n++
		}
	}
	return n
}

// envOf is the sidecar's literal env of a patched pod.
func envOf(pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, c := range pod.Spec.Containers {
		if c.Name != ContainerName {
			continue
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				out[e.Name] = e.Value
			}
		}
	}
	return out
}

// TestUpstreamProtocol: a port named h2c or the annotation sets
// QUEUE_UPSTREAM_PROTOCOL=h2c; the annotation wins; else http1.
func TestUpstreamProtocol(t *testing.T) {
	tests := []struct {
		name, port, ann, want string
	}{
		{"plain", "http", "", "http1"},
		{"port named h2c", "h2c", "", "h2c"},
		{"annotation h2c", "", "h2c", "h2c"},
		{"annotation http1 over a port named h2c", "h2c", "http1", "http1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
				Ports: []corev1.ContainerPort{{Name: tt.port, ContainerPort: 8080}}}}}}
			if tt.ann != "" {
				pod.Annotations = map[string]string{"autoscaling.ebb.dev/upstream-protocol": tt.ann}
			}
			res, err := Pod(Input{Pod: pod}, testSettings())
			if err != nil {
				t.Fatal(err)
			}
			if got := envOf(apply(t, pod, res.Patch))["QUEUE_UPSTREAM_PROTOCOL"]; got != tt.want {
				t.Errorf("QUEUE_UPSTREAM_PROTOCOL = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRefused: a pod Ebb cannot wire is refused with the field and the fix.
func TestRefused(t *testing.T) {
	app := func(mod func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "x"}}}}
		mod(p)
		return p
	}
	port := func(n int32) []corev1.ContainerPort { return []corev1.ContainerPort{{ContainerPort: n}} }
	tests := []struct {
		name string
		pod  *corev1.Pod
		want []string // substrings of the error
	}{
		{"two ports", app(func(p *corev1.Pod) { p.Spec.Containers[0].Ports = append(port(8080), port(8081)...) }),
			[]string{"spec.containers[0].ports", "declares 2 ports", "keep only"}},
		{"two containers with ports", app(func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = port(8080)
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "b", Ports: port(8081)})
		}), []string{"spec.containers", `"app" and "b" both declare ports`}},
		{"two containers without ports", app(func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "b"})
		}), []string{"2 containers and none declares a port", "containerPort"}},
		{"reserved port", app(func(p *corev1.Pod) { p.Spec.Containers[0].Ports = port(8012) }),
			[]string{"spec.containers[0]", "8012 is reserved", "move the app"}},
		{"PORT differs from the port", app(func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = port(8080)
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "PORT", Value: "9000"}}
		}), []string{"spec.containers[0].env", `PORT="9000"`, "8080"}},
		{"PORT not a number", app(func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "PORT", Value: "http"}}
		}), []string{"PORT=\"http\" is not a port"}},
		{"bad container-concurrency", app(func(p *corev1.Pod) {
			p.Annotations = map[string]string{"autoscaling.ebb.dev/container-concurrency": "-1"}
		}), []string{"metadata.annotations", "autoscaling.ebb.dev/container-concurrency"}},
		{"bad upstream-protocol", app(func(p *corev1.Pod) {
			p.Annotations = map[string]string{"autoscaling.ebb.dev/upstream-protocol": "grpc"}
		}), []string{"metadata.annotations", "autoscaling.ebb.dev/upstream-protocol", "http1 or h2c"}},
		{"bad timeout", app(func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "REVISION_TIMEOUT_SECONDS", Value: "0"}}
		}), []string{"spec.containers[0].env", `"REVISION_TIMEOUT_SECONDS" = "0"`, "within [0.001, 3600]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Pod(Input{Pod: tt.pod}, testSettings())
			if err == nil {
				t.Fatal("Pod accepted it; want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestDeterministic: the same pod gives the same bytes, and the input pod
// is not modified.
func TestDeterministic(t *testing.T) {
	pod := readPod(t, "testdata/grpc-h2c-port.yaml")
	before := pod.DeepCopy()
	var first []byte
	for i := range 5 {
		res, err := Pod(Input{Pod: pod}, testSettings())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res)
		if i == 0 {
			first = b
		} else if !bytes.Equal(first, b) {
			t.Fatalf("run %d differs:\n%s\n%s", i, first, b)
		}
	}
	if diff := cmp.Diff(before, pod); diff != "" {
		t.Errorf("the input pod changed (-before +after):\n%s", diff)
	}
}

// TestRevisionGiven: a caller that knows the Deployment (convert's long
// form, which injects into a template without an owner) names it; the
// queue-proxy then reports it and nothing is warned.
func TestRevisionGiven(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "x"}}}}
	res, err := Pod(Input{Pod: pod, Revision: "hello"}, testSettings())
	if err != nil {
		t.Fatal(err)
	}
	env := envOf(apply(t, pod, res.Patch))
	if got := env["SERVING_REVISION"]; got != "hello" || len(res.Warnings) != 0 {
		t.Errorf("SERVING_REVISION = %q, warnings %q; want hello and none", got, res.Warnings)
	}
	if env["SERVING_CONFIGURATION"] != "hello" || env["SERVING_SERVICE"] != "" {
		t.Errorf("SERVING_CONFIGURATION %q, SERVING_SERVICE %q: want hello and empty (no Service owns it)", env["SERVING_CONFIGURATION"], env["SERVING_SERVICE"])
	}
}

// TestKnativeServingEnv: a revision converted from a Knative Service gets
// Knative's SERVING_* variables with Knative's meanings, the namespace
// from the downward API.
func TestKnativeServingEnv(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"serving.knative.dev/service": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "x"}}}}
	res, err := Pod(Input{Pod: pod, Revision: "web"}, testSettings())
	if err != nil {
		t.Fatal(err)
	}
	out := apply(t, pod, res.Patch)
	env := envOf(out)
	for k, v := range map[string]string{"SERVING_REVISION": "web", "SERVING_CONFIGURATION": "web", "SERVING_SERVICE": "web"} {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	for _, c := range out.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == "SERVING_NAMESPACE" && (e.ValueFrom == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.namespace") {
				t.Errorf("SERVING_NAMESPACE %+v: want the downward API's metadata.namespace", e)
			}
		}
	}
}
