package webhook

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	"ebb.dev/ebb/pkg/manifest/inject/injecttest"
)

// appPod is an opted-in Deployment's pod as the API server sends it, with
// fields Ebb does not know (as a newer Kubernetes would have) on the pod,
// its spec and its app container; spec is spliced into the spec, app into
// the app container.
func appPod(spec, app string) string {
	return `{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"hello-5d8f-","namespace":"shop",` +
		`"labels":{"app":"hello","autoscaling.ebb.dev/enabled":"true","pod-template-hash":"5d8f"},` +
		`"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"hello-5d8f","uid":"u1","controller":true}]},` +
		`"spec":{"futurePodField":{"mode":"x"}` + spec + `,"containers":[{"name":"app","image":"example.com/app",` +
		`"futureContainerField":[1,2]` + app + `}]},"status":{}}`
}

// admit posts the pod's creation in ns to the handler, as the API server
// does, and returns the response.
func admit(t *testing.T, ns, pod string) *admissionv1.AdmissionResponse {
	t.Helper()
	out, err := Review(rawPodReview(t, ns, []byte(pod)), testPolicy())
	if err != nil {
		t.Fatal(err)
	}
	return decodeResponse(t, out)
}

// applied is the pod after the response's patch, applied as the API server
// does, checked: it has the problems the pod had before and no more (none
// hidden by a moved port), its queue-proxy starts on its environment, and
// no field was lost.
func applied(t *testing.T, pod string, r *admissionv1.AdmissionResponse) *corev1.Pod {
	t.Helper()
	if !r.Allowed || r.PatchType == nil || *r.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Fatalf("response %+v; want allowed with a JSONPatch", r)
	}
	var ops []struct{ Op, Path string }
	if err := json.Unmarshal(r.Patch, &ops); err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if op.Op == "replace" && strings.Count(op.Path, "/") < 4 {
			t.Errorf("patch replaces %s whole; want each changed field patched", op.Path)
		}
	}
	out, err := injecttest.Apply([]byte(pod), r.Patch)
	if err != nil {
		t.Fatal(err)
	}
	if lost, err := injecttest.Lost([]byte(pod), out, 0); err != nil || len(lost) > 0 {
		t.Errorf("fields lost: %q %v\n%s", lost, err, out)
	}
	var before, after corev1.Pod
	if err := json.Unmarshal([]byte(pod), &before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &after); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(injecttest.Problems(&before), injecttest.Problems(&after)); diff != "" {
		t.Errorf("problems (-before +after):\n%s", diff)
	}
	if p := injecttest.Sidecar(&after, 0); len(p) > 0 {
		t.Errorf("sidecar: %q", p)
	}
	return &after
}

// TestReviewRefusals: each pod the injection would bend is refused, 400,
// with the field, the value, why and the fix.
func TestReviewRefusals(t *testing.T) {
	nativeSidecar := func(port int) string {
		return `,"initContainers":[{"name":"mesh","image":"m","restartPolicy":"Always","ports":[{"containerPort":` + strconv.Itoa(port) + `}]}]`
	}
	tests := []struct {
		name, spec, app string
		want            []string
	}{
		{"a native sidecar on the serving port", nativeSidecar(8012), "",
			[]string{"spec.initContainers[0].ports[0].containerPort: 8012 is the queue-proxy's serving port (8012)", `container "mesh"`, "move that container"}},
		{"a native sidecar on the app's port", nativeSidecar(8080), `,"ports":[{"containerPort":8080}]`,
			[]string{"spec.initContainers[0].ports[0].containerPort: 8080 is the app's port (8080, of spec.containers[0])"}},
		{"an init container on the admin port", `,"initContainers":[{"name":"setup","image":"s","ports":[{"containerPort":9090}]}]`, "",
			[]string{"spec.initContainers[0].ports[0].containerPort: 9090 is the queue-proxy's admin port (9090)"}},
		{"timeout NaN", "", `,"env":[{"name":"REVISION_TIMEOUT_SECONDS","value":"NaN"}]`,
			[]string{`spec.containers[0].env: environment variable "REVISION_TIMEOUT_SECONDS" = "NaN": must be a number of seconds within [0.001, 3600]`,
				"or remove the variable (default: 300s)"}},
		{"timeout below a millisecond", "", `,"env":[{"name":"REVISION_TIMEOUT_SECONDS","value":"1e-300"}]`,
			[]string{`"REVISION_TIMEOUT_SECONDS" = "1e-300": must be a number of seconds within [0.001, 3600]`}},
		{"idle timeout above the request timeout", "", `,"env":[{"name":"REVISION_TIMEOUT_SECONDS","value":"10"},` +
			`{"name":"REVISION_IDLE_TIMEOUT_SECONDS","value":"20"}]`,
			[]string{`spec.containers[0].env: environment variable "REVISION_IDLE_TIMEOUT_SECONDS" = "20": must not exceed REVISION_TIMEOUT_SECONDS (10)`}},
		{"a timeout through valueFrom", "", `,"env":[{"name":"REVISION_TIMEOUT_SECONDS","valueFrom":{"configMapKeyRef":{"name":"c","key":"k"}}}]`,
			[]string{"spec.containers[0].env: REVISION_TIMEOUT_SECONDS is set through valueFrom", "write the number of seconds as its value"}},
		{"PORT through valueFrom", "", `,"env":[{"name":"PORT","valueFrom":{"configMapKeyRef":{"name":"c","key":"port"}}}]`,
			[]string{"spec.containers[0].env: PORT is set through valueFrom", "declare ports: [{containerPort: N}] and remove PORT"}},
		{"a negative containerPort", "", `,"ports":[{"containerPort":-5}]`,
			[]string{"spec.containers[0].ports[0].containerPort: -5 is not a port: must be within [1, 65535]"}},
		{"a containerPort above 65535", "", `,"ports":[{"containerPort":70000}]`,
			[]string{"spec.containers[0].ports[0].containerPort: 70000 is not a port"}},
		{"a UDP port", "", `,"ports":[{"containerPort":8080,"protocol":"UDP"}]`,
			[]string{"spec.containers[0].ports[0].protocol: UDP: the queue-proxy proxies HTTP over TCP"}},
		{"a hostPort", "", `,"ports":[{"containerPort":8080,"hostPort":80}]`,
			[]string{"spec.containers[0].ports[0].hostPort: 80", "around the queue-proxy", "remove hostPort"}},
		{"an invalid port name", "", `,"ports":[{"containerPort":8080,"name":"Web_Port"}]`,
			[]string{`spec.containers[0].ports[0].name: "Web_Port"`, "fix the name or remove it"}},
		{"hostNetwork", `,"hostNetwork":true`, "",
			[]string{"spec.hostNetwork: true", "the node's ports", "remove hostNetwork, or remove the label autoscaling.ebb.dev/enabled"}},
		{"an init container named queue-proxy", `,"initContainers":[{"name":"queue-proxy","image":"x"}]`, "",
			[]string{`spec.initContainers[0].name: "queue-proxy" is the name of Ebb's sidecar`, "rename the init container"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := admit(t, "shop", appPod(tt.spec, tt.app))
			if r.Allowed || r.Patch != nil || r.Result == nil || r.Result.Code != http.StatusBadRequest {
				t.Fatalf("response %+v; want refused (400) without a patch", r)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.Result.Message, w) {
					t.Errorf("message %q lacks %q", r.Result.Message, w)
				}
			}
		})
	}
}

// TestReviewPatchesOnlyWhatItChanges: the app container is patched field
// by field, so fields Ebb does not know survive; its env gets PORT only
// when it has none (a second definition is a name defined twice); a
// fractional timeout is taken as the queue-proxy takes it.
func TestReviewPatchesOnlyWhatItChanges(t *testing.T) {
	tests := []struct {
		name, spec, app string
		check           func(t *testing.T, pod *corev1.Pod)
	}{
		{"fields Ebb does not know", "", `,"ports":[{"name":"http","containerPort":8080}],"env":[{"name":"A","value":"b"}],` +
			`"readinessProbe":{"httpGet":{"path":"/ready","port":"http"},"periodSeconds":3},"livenessProbe":{"tcpSocket":{"port":"http"}}`,
			func(t *testing.T, pod *corev1.Pod) {
				app := pod.Spec.Containers[0]
				if app.ReadinessProbe != nil || app.LivenessProbe.TCPSocket.Port.IntValue() != 8080 || len(app.Env) != 2 || app.Env[1].Value != "8080" {
					t.Errorf("app %+v; want its readiness moved, liveness on 8080, PORT=8080 appended", app)
				}
			}},
		{"PORT defined twice, the last equal to the port", "",
			`,"ports":[{"containerPort":8080}],"env":[{"name":"PORT","value":"9000"},{"name":"PORT","value":"8080"}]`,
			func(t *testing.T, pod *corev1.Pod) {
				if n := len(pod.Spec.Containers[0].Env); n != 2 {
					t.Errorf("app env %+v; want the two definitions as given, no third", pod.Spec.Containers[0].Env)
				}
			}},
		{"a fractional timeout", "", `,"env":[{"name":"REVISION_TIMEOUT_SECONDS","value":"0.5"}]`,
			func(t *testing.T, pod *corev1.Pod) {
				if g := pod.Spec.TerminationGracePeriodSeconds; g == nil || *g != 21 {
					t.Errorf("grace %v; want 21 (0.5s + the 15s drain + the app's 5s margin, rounded up)", ptrValue(g))
				}
			}},
		{"a native sidecar on other ports", `,"initContainers":[{"name":"mesh","image":"m","restartPolicy":"Always","ports":[{"containerPort":15001}]}]`,
			`,"ports":[{"containerPort":8080}]`,
			func(t *testing.T, pod *corev1.Pod) {
				if len(pod.Spec.InitContainers) != 1 || len(pod.Spec.Containers) != 2 {
					t.Errorf("pod %+v; want the native sidecar kept and the queue-proxy added", pod.Spec)
				}
			}},
		{"a probe the queue-proxy cannot run stays", "",
			`,"ports":[{"containerPort":8080}],"readinessProbe":{"httpGet":{"path":"/ready","port":8081},"periodSeconds":600}`,
			func(t *testing.T, pod *corev1.Pod) {
				if p := pod.Spec.Containers[0].ReadinessProbe; p == nil || p.HTTPGet.Port.IntValue() != 8081 {
					t.Errorf("readiness %+v; want it kept on the app", p)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := appPod(tt.spec, tt.app)
			tt.check(t, applied(t, pod, admit(t, "shop", pod)))
		})
	}
}

// TestReviewExcludedNamespaces: the handler never injects into
// kube-system or Ebb's namespace, whatever the webhook's configuration
// sends it: the pod is allowed unchanged, with a warning saying why.
func TestReviewExcludedNamespaces(t *testing.T) {
	for _, ns := range []string{"kube-system", "ebb-system"} {
		t.Run(ns, func(t *testing.T) {
			r := admit(t, ns, appPod("", ""))
			if !r.Allowed || r.Patch != nil || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], `namespace "`+ns+`" is excluded`) {
				t.Errorf("response %+v; want allowed unchanged with a warning", r)
			}
		})
	}
	if r := admit(t, "shop", appPod("", "")); r.Patch == nil {
		t.Errorf("shop: %+v; want the patch", r)
	}
}

// ptrValue is *p, or -1 for nil (for messages).
func ptrValue(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}
