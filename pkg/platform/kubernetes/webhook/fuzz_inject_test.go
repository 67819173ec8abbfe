package webhook

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	"ebb.dev/ebb/pkg/manifest/inject/injecttest"
)

// shape reads a fuzzer's bytes as choices; past the end every choice is 0.
type shape struct {
	b []byte
	i int
}

func (s *shape) pick(n int) int {
	if s.i >= len(s.b) {
		return 0
	}
	s.i++
	return int(s.b[s.i-1]) % n
}

func (s *shape) of(choices ...any) any { return choices[s.pick(len(choices))] }

// fuzzPod builds a pod of the shapes the webhook meets (and some it must
// refuse), as JSON with fields Ebb does not know: up to three containers
// and two init containers (native sidecars or not) with ports, env (PORT
// and the timeouts as literals or valueFrom, timeout and port as given),
// probes, lifecycle hooks, hostNetwork and a grace period. app is the
// container the queue-proxy would front (the only one, else the only one
// with ports).
func fuzzPod(s *shape, timeout, port string) (raw []byte, ns string, app int) {
	spec := map[string]any{"futurePodField": map[string]any{"k": s.pick(9)}}
	n := 1 + s.pick(3)
	var containers []any
	app = 0
	for i := range n {
		c := fuzzContainer(s, i, timeout, port)
		if i > 0 && c["ports"] != nil {
			app = i
		}
		containers = append(containers, c)
	}
	spec["containers"] = containers
	var inits []any
	for range s.pick(3) {
		c := map[string]any{"name": s.of("init", "mesh", "queue-proxy", "app"), "image": "i", "futureInitField": true}
		if s.pick(2) == 1 {
			c["restartPolicy"] = "Always"
		}
		if p := fuzzPorts(s); p != nil {
			c["ports"] = p
		}
		inits = append(inits, c)
	}
	if inits != nil {
		spec["initContainers"] = inits
	}
	if s.pick(7) == 0 {
		spec["hostNetwork"] = true
	}
	if g := s.of(nil, 30, 600, 0); g != nil {
		spec["terminationGracePeriodSeconds"] = g
	}
	labels := map[string]any{"app": "a", "pod-template-hash": "h"}
	if s.pick(8) != 0 {
		labels["autoscaling.ebb.dev/enabled"] = "true"
	}
	meta := map[string]any{"generateName": "a-h-", "labels": labels, "futureMetaField": "x",
		"ownerReferences": []any{map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "a-h", "uid": "u", "controller": true}}}
	if cc := s.of(nil, "4", "1001"); cc != nil {
		meta["annotations"] = map[string]any{"autoscaling.ebb.dev/container-concurrency": cc}
	}
	raw, _ = json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
	return raw, s.of("shop", "shop", "shop", "kube-system").(string), app
}

func fuzzContainer(s *shape, i int, timeout, port string) map[string]any {
	c := map[string]any{"name": []string{"app", "b", "c"}[i], "image": "x", "futureContainerField": []any{s.pick(5)}}
	if p := fuzzPorts(s); p != nil {
		c["ports"] = p
	}
	var env []any
	for range s.pick(4) {
		literal := func(name, v string) any { return map[string]any{"name": name, "value": v} }
		from := func(name string) any {
			return map[string]any{"name": name, "valueFrom": map[string]any{"configMapKeyRef": map[string]any{"name": "c", "key": "k"}}}
		}
		env = append(env, s.of(literal("PORT", port), literal("PORT", "8080"), from("PORT"), literal("REVISION_TIMEOUT_SECONDS", timeout),
			literal("REVISION_IDLE_TIMEOUT_SECONDS", s.of("0", "10", "400").(string)), from("REVISION_RESPONSE_START_TIMEOUT_SECONDS"),
			literal("A", "b")))
	}
	if env != nil {
		c["env"] = env
	}
	if p := fuzzProbe(s); p != nil {
		c["readinessProbe"] = p
	}
	if p := fuzzProbe(s); p != nil {
		c["livenessProbe"] = p
	}
	if l := s.of(nil, map[string]any{}, map[string]any{"preStop": map[string]any{"exec": map[string]any{"command": []any{"x"}}}}); l != nil {
		c["lifecycle"] = l
	}
	return c
}

func fuzzPorts(s *shape) []any {
	var ports []any
	for range s.pick(3) {
		p := map[string]any{"containerPort": s.of(8080, 8012, 9090, -5, 70000, 3000, 15001, 8080)}
		if proto := s.of("", "TCP", "TCP", "UDP"); proto != "" {
			p["protocol"] = proto
		}
		if name := s.of("", "http", "h2c", "Bad_Name"); name != "" {
			p["name"] = name
		}
		if s.pick(6) == 0 {
			p["hostPort"] = 80
		}
		ports = append(ports, p)
	}
	return ports
}

func fuzzProbe(s *shape) any {
	get := func(port any) map[string]any { return map[string]any{"path": "/ready", "port": port} }
	switch s.pick(8) {
	case 1:
		return map[string]any{"httpGet": get("http"), "periodSeconds": s.of(1, 600)}
	case 2:
		return map[string]any{"httpGet": get(8080), "timeoutSeconds": s.of(1, 61), "initialDelaySeconds": 3}
	case 3:
		return map[string]any{"tcpSocket": map[string]any{"port": s.of("h2c", 8080, 3000)}}
	case 4:
		return map[string]any{"exec": map[string]any{"command": []any{"true"}}}
	case 5:
		g := get("http")
		g["scheme"] = "HTTPS"
		return map[string]any{"httpGet": g}
	case 6:
		return map[string]any{"httpGet": map[string]any{"path": "healthz", "port": 8080}, "failureThreshold": s.of(3, 101)}
	}
	return nil
}

// FuzzReviewKeepsPodsValid: for any pod of fuzzPod's shapes, the webhook
// refuses it with a message naming a field, or answers a patch that the
// API server can apply (as it does: the same library) and after which the
// pod has exactly the problems it had (ports unique across containers and
// init containers, native sidecars included; ports in range; probes naming
// real ports; the preStop sleep within the grace period), none hidden by a
// port moved behind the queue-proxy; no field of the pod is lost or
// changed but those the injection owns; the grace period only grows and
// covers the drain and the request timeout; the queue-proxy starts on its
// environment (its own loader); and a second review changes nothing.
func FuzzReviewKeepsPodsValid(f *testing.F) {
	for _, seed := range []struct {
		shape         []byte
		timeout, port string
	}{
		{[]byte{0, 1, 0, 0}, "300", "8080"},
		{[]byte{0, 1, 1, 0, 0, 0, 3, 3, 1, 2, 5, 1}, "0.5", "3000"},
		{[]byte{1, 1, 0, 0, 0, 0, 2, 0, 2, 1, 1}, "NaN", "-5"},
		{[]byte{2, 0, 0, 1, 1, 0, 0, 1, 2, 1, 1, 1, 7, 1, 0, 0}, "1e-300", "8012"},
	} {
		f.Add(seed.shape, seed.timeout, seed.port)
	}
	f.Fuzz(func(t *testing.T, b []byte, timeout, port string) {
		raw, ns, app := fuzzPod(&shape{b: b}, timeout, port)
		out, err := Review(rawPodReview(t, ns, raw), testPolicy())
		if err != nil {
			t.Fatalf("Review: %v", err)
		}
		var review admissionv1.AdmissionReview
		if err := json.Unmarshal(out, &review); err != nil {
			t.Fatal(err)
		}
		r := review.Response
		if !r.Allowed {
			if msg := r.Result.Message; !strings.HasPrefix(msg, "ebb sidecar injection: spec.") && !strings.HasPrefix(msg, "ebb sidecar injection: metadata.") {
				t.Fatalf("refused without naming the field: %q\n%s", msg, raw)
			}
			return
		}
		if r.Patch == nil {
			return
		}
		patched, err := injecttest.Apply(raw, r.Patch)
		if err != nil {
			t.Fatalf("%v\npod %s\npatch %s", err, raw, r.Patch)
		}
		checkInjected(t, raw, patched, app)
		again, err := Review(rawPodReview(t, ns, patched), testPolicy())
		if err != nil {
			t.Fatal(err)
		}
		var second admissionv1.AdmissionReview
		if err := json.Unmarshal(again, &second); err != nil || !second.Response.Allowed || second.Response.Patch != nil {
			t.Fatalf("second review: %s, %v; want allowed unchanged", again, err)
		}
	})
}

// checkInjected is the fuzz target's check of one patched pod.
func checkInjected(t *testing.T, raw, patched []byte, app int) {
	t.Helper()
	if lost, err := injecttest.Lost(raw, patched, app); err != nil || len(lost) > 0 {
		t.Fatalf("fields lost or changed: %q %v\npod %s\npatched %s", lost, err, raw, patched)
	}
	var before, after corev1.Pod
	if err := json.Unmarshal(raw, &before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(patched, &after); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(injecttest.Problems(&before), injecttest.Problems(&after)); diff != "" {
		t.Fatalf("problems (-before +after):\n%s\npod %s\npatched %s", diff, raw, patched)
	}
	if p := injecttest.Sidecar(&after, app); len(p) > 0 {
		t.Fatalf("sidecar: %q\npod %s\npatched %s", p, raw, patched)
	}
}
