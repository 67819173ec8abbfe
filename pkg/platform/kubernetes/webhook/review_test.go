package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/manifest/inject"
	"ebb.dev/ebb/pkg/stats"
)

func testPolicy() Policy {
	return Policy{Settings: inject.DefaultSettings("ebb.dev/queueproxy:dev"), ExcludedNamespaces: DefaultExcludedNamespaces(config.SystemNamespace)}
}

// podReview is the AdmissionReview the API server sends for a pod's
// creation in the namespace default.
func podReview(t testing.TB, pod *corev1.Pod) []byte {
	t.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return rawPodReview(t, "default", raw)
}

// rawPodReview is the AdmissionReview of a pod given as JSON (fields Ebb
// does not know included) created in namespace ns.
func rawPodReview(t testing.TB, ns string, raw []byte) []byte {
	t.Helper()
	r := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "0d4b1a5e-1", Namespace: ns, Operation: admissionv1.Create,
			Kind:     metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Object:   runtime.RawExtension{Raw: raw}},
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// helloPod is pkg/manifest/inject's example pod.
func helloPod(t testing.TB) *corev1.Pod {
	t.Helper()
	raw, err := os.ReadFile("../../../manifest/inject/testdata/hello.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := yaml.Unmarshal(raw, &pod); err != nil {
		t.Fatal(err)
	}
	return &pod
}

func decodeResponse(t *testing.T, b []byte) *admissionv1.AdmissionResponse {
	t.Helper()
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("decoding the answer: %v\n%s", err, b)
	}
	if out.APIVersion != "admission.k8s.io/v1" || out.Kind != "AdmissionReview" || out.Response == nil {
		t.Fatalf("answer is not an AdmissionReview with a response: %s", b)
	}
	if out.Response.UID != "0d4b1a5e-1" {
		t.Errorf("response uid %q, want the request's", out.Response.UID)
	}
	return out.Response
}

// TestReview: an opted-in pod gets inject.Pod's patch as a JSONPatch; a
// pod without the label, one with its sidecar, and other operations pass
// unchanged; a pod Ebb cannot wire is refused with the field and the fix.
func TestReview(t *testing.T) {
	want, err := inject.Pod(inject.Input{Pod: helloPod(t)}, testPolicy().Settings)
	if err != nil {
		t.Fatal(err)
	}
	wantPatch, _ := json.Marshal(want.Patch)

	t.Run("opted in", func(t *testing.T) {
		out, err := Review(podReview(t, helloPod(t)), testPolicy())
		if err != nil {
			t.Fatal(err)
		}
		r := decodeResponse(t, out)
		if !r.Allowed || r.PatchType == nil || *r.PatchType != admissionv1.PatchTypeJSONPatch || !bytes.Equal(r.Patch, wantPatch) {
			t.Errorf("response %+v; want allowed with inject.Pod's JSONPatch", r)
		}
	})
	unchanged := map[string]func(*admissionv1.AdmissionReview){
		"no label": func(r *admissionv1.AdmissionReview) {
			pod := helloPod(t)
			delete(pod.Labels, "autoscaling.ebb.dev/enabled")
			r.Request.Object.Raw, _ = json.Marshal(pod)
		},
		"sidecar already": func(r *admissionv1.AdmissionReview) {
			pod := helloPod(t)
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "queue-proxy"})
			r.Request.Object.Raw, _ = json.Marshal(pod)
		},
		"update":      func(r *admissionv1.AdmissionReview) { r.Request.Operation = admissionv1.Update },
		"subresource": func(r *admissionv1.AdmissionReview) { r.Request.SubResource = "status" },
	}
	for name, mod := range unchanged {
		t.Run(name, func(t *testing.T) {
			var in admissionv1.AdmissionReview
			_ = json.Unmarshal(podReview(t, helloPod(t)), &in)
			mod(&in)
			b, _ := json.Marshal(in)
			out, err := Review(b, testPolicy())
			if err != nil {
				t.Fatal(err)
			}
			if r := decodeResponse(t, out); !r.Allowed || r.Patch != nil {
				t.Errorf("response %+v; want allowed unchanged", r)
			}
		})
	}
	t.Run("refused", func(t *testing.T) {
		pod := helloPod(t)
		pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8012}}
		pod.Spec.Containers[0].Env = nil
		out, err := Review(podReview(t, pod), testPolicy())
		if err != nil {
			t.Fatal(err)
		}
		r := decodeResponse(t, out)
		if r.Allowed || r.Result == nil || r.Result.Code != http.StatusBadRequest ||
			!strings.Contains(r.Result.Message, "spec.containers[0]") || !strings.Contains(r.Result.Message, "reserved") {
			t.Errorf("response %+v; want refused naming spec.containers[0] and the reserved port", r)
		}
	})
}

// TestReviewMalformed: what the API server never sends is an error that
// says what is wrong, and the handler answers it 400.
func TestReviewMalformed(t *testing.T) {
	valid := string(podReview(t, helloPod(t)))
	tests := []struct{ name, body, want string }{
		{"empty", "", "decoding the body"},
		{"not JSON", "{", "decoding the body"},
		{"v1beta1", strings.Replace(valid, "admission.k8s.io/v1", "admission.k8s.io/v1beta1", 1), "want admission.k8s.io/v1"},
		{"no request", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, "no request"},
		{"no uid", strings.Replace(valid, `"uid":"0d4b1a5e-1"`, `"uid":""`, 1), "uid is empty"},
		{"wrong type", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":7}}`, "decoding the body"},
	}
	h := &Handler{Policy: testPolicy(), Log: zap.NewNop()}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Review([]byte(tt.body), testPolicy())
			if !errors.Is(err, errBadReview) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v; want ErrBadReview saying %q", err, tt.want)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, InjectPath, strings.NewReader(tt.body)))
			if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), tt.want) {
				t.Errorf("handler: %d %q; want 400 saying %q", rec.Code, rec.Body.String(), tt.want)
			}
		})
	}
	t.Run("GET", func(t *testing.T) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, InjectPath, nil))
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("GET: %d, want 405", rec.Code)
		}
	})
	t.Run("undecodable pod", func(t *testing.T) {
		body := strings.Replace(valid, `"containers":[`, `"containers":7,"x":[`, 1)
		out, err := Review([]byte(body), testPolicy())
		if err != nil {
			t.Fatal(err)
		}
		if r := decodeResponse(t, out); r.Allowed || !strings.Contains(r.Result.Message, "decoding the pod") {
			t.Errorf("response %+v; want refused: decoding the pod", r)
		}
	})
}

// FuzzReview: any body gives an answer or ErrBadReview, never a panic;
// an answer is an AdmissionReview whose patch, when any, is valid JSON.
func FuzzReview(f *testing.F) {
	f.Add(podReview(f, helloPod(f)))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"CREATE",` +
		`"resource":{"version":"v1","resource":"pods"},"object":{"metadata":{"labels":{"autoscaling.ebb.dev/enabled":"true"}},` +
		`"spec":{"containers":[{"name":"a","ports":[{"containerPort":1}]}]}}}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := Review(body, testPolicy())
		if err != nil {
			if !errors.Is(err, errBadReview) {
				t.Fatalf("error %v is not ErrBadReview", err)
			}
			return
		}
		var r admissionv1.AdmissionReview
		if err := json.Unmarshal(out, &r); err != nil || r.Response == nil {
			t.Fatalf("answer %s: %v", out, err)
		}
		if r.Response.Patch != nil && !json.Valid(r.Response.Patch) {
			t.Fatalf("patch is not JSON: %s", r.Response.Patch)
		}
	})
}

// BenchmarkReview is one pod's review through the HTTP handler (without
// TLS): its p99 must stay under 5ms (issue 15); reported as p99-ms.
func BenchmarkReview(b *testing.B) {
	body := podReview(b, helloPod(b))
	h := &Handler{Policy: testPolicy(), Log: zap.NewNop()}
	durs := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, InjectPath, bytes.NewReader(body)))
		durs = append(durs, time.Since(start))
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
	b.StopTimer()
	slices.Sort(durs)
	p99 := durs[len(durs)*99/100]
	b.ReportMetric(float64(p99)/float64(time.Millisecond), "p99-ms")
	if p99 > 5*time.Millisecond {
		b.Errorf("p99 %s, want under 5ms", p99)
	}
}

// TestReviewProxySecret: with the install's proxy secret, each injected
// sidecar gets the secret of the namespace the API server names (not one
// the pod's own metadata claims), as a value; without it yet, an opted-in
// pod is refused with the reason (its ReplicaSet tries again).
func TestReviewProxySecret(t *testing.T) {
	const install = "install-secret-0123456789abcdef"
	p := testPolicy()
	p.ProxySecret = func() (string, error) { return install, nil }
	envOf := func(ns string) string {
		t.Helper()
		pod := helloPod(t)
		pod.Namespace = "victim" // a claim the handler must not believe
		raw, _ := json.Marshal(pod)
		out, err := Review(rawPodReview(t, ns, raw), p)
		if err != nil {
			t.Fatal(err)
		}
		r := decodeResponse(t, out)
		if !r.Allowed {
			t.Fatalf("refused: %+v", r.Result)
		}
		var ops []struct {
			Path  string
			Value json.RawMessage
		}
		if err := json.Unmarshal(r.Patch, &ops); err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			var c corev1.Container
			if json.Unmarshal(op.Value, &c) != nil || c.Name != "queue-proxy" {
				continue
			}
			for _, e := range c.Env {
				if e.Name == stats.ProxySecretEnv {
					if e.ValueFrom != nil {
						t.Fatalf("%s from %+v, want a value", e.Name, e.ValueFrom)
					}
					return e.Value
				}
			}
		}
		t.Fatalf("no %s in the injected sidecar: %s", stats.ProxySecretEnv, r.Patch)
		return ""
	}
	for _, ns := range []string{"team-a", "team-b"} {
		if got, want := envOf(ns), stats.NamespaceProxySecret(install, ns); got != want {
			t.Errorf("namespace %s: %s = %q, want %q", ns, stats.ProxySecretEnv, got, want)
		}
	}

	p.ProxySecret = func() (string, error) {
		return "", errors.New("the install's proxy secret is not loaded yet: forbidden")
	}
	out, err := Review(podReview(t, helloPod(t)), p)
	if err != nil {
		t.Fatal(err)
	}
	if r := decodeResponse(t, out); r.Allowed || r.Result == nil || !strings.Contains(r.Result.Message, "not loaded yet: forbidden") ||
		!strings.Contains(r.Result.Message, stats.ProxySecretName) {
		t.Errorf("response %+v; want refused, naming the cause and the Secret", r)
	}
}
