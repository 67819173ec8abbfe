package local

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/activator"
	"ebb.dev/ebb/pkg/autoscaler"
)

const knativeService = `apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: grpc-ping, namespace: prod}
spec:
  template:
    metadata:
      name: grpc-ping-v1
      annotations: {autoscaling.knative.dev/target: "5"}
    spec:
      containerConcurrency: 3
      timeoutSeconds: 60
      idleTimeoutSeconds: 10
      containers:
        - image: ignored
          command: ["./ping"]
          args: ["--flag"]
          env: [{name: GREETING, value: hi}]
          ports: [{name: h2c, containerPort: 9000}]
          readinessProbe: {httpGet: {path: /ready}}
          resources: {requests: {cpu: 100m}}
`

// TestLoadKnativeService: a Knative Service runs as its Deployment would:
// command, args and env (PORT is the platform's), the probe path, h2c from
// the port name, containerConcurrency as the hard limit, and its timeouts
// in the queue-proxy's environment and the activator's revision.
func TestLoadKnativeService(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "ksvc.yaml", knativeService)
	st, err := load([]string{filepath.Join(dir, "ksvc.yaml")}, "/work")
	if err != nil {
		t.Fatal(err)
	}
	key := autoscaler.RevisionKey{Namespace: "prod", Name: "grpc-ping"}
	spec, ok := st.revisions[key]
	if !ok {
		t.Fatalf("revisions %v: want %s", st.revisions, key)
	}
	want := revSpec{argv: []string{"./ping", "--flag"}, env: []string{"GREETING=hi"}, dir: "/work", probePath: "/ready",
		upstream: "h2c", concurrency: 3, lb: activator.LBAuto, container: "user-container", cpuRequest: 0.1}
	got := revSpec{argv: spec.argv, env: spec.env, dir: spec.dir, probePath: spec.probePath, upstream: spec.upstream, concurrency: spec.concurrency, lb: spec.lb,
		container: spec.container, cpuRequest: spec.cpuRequest, memRequest: spec.memRequest}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(revSpec{})); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"REVISION_TIMEOUT_SECONDS=60", "REVISION_IDLE_TIMEOUT_SECONDS=10"}, spec.timeoutEnv()); diff != "" {
		t.Errorf("timeout env (-want +got):\n%s", diff)
	}
	if spec.requestTimeout() != time.Minute {
		t.Errorf("request timeout %v, want 1m", spec.requestTimeout())
	}
	if spec.annotations["autoscaling.ebb.dev/container-concurrency"] != "3" {
		t.Errorf("annotations %v: want the container concurrency for the decider", spec.annotations)
	}
	if len(st.warnings) != 1 || !strings.Contains(st.warnings[0], `spec.template.metadata.name: the revision name "grpc-ping-v1"`) {
		t.Errorf("warnings %q: want the revision name's", st.warnings)
	}
	p, err := New(Options{Paths: []string{"x"}, QueueProxy: "qp"})
	if err != nil {
		t.Fatal(err)
	}
	env := p.queueProxyEnv(spec, &replica{name: "r"})
	for _, v := range []string{"CONTAINER_CONCURRENCY=3", "QUEUE_UPSTREAM_PROTOCOL=h2c", "REVISION_TIMEOUT_SECONDS=60", "REVISION_IDLE_TIMEOUT_SECONDS=10"} {
		if !slices.Contains(env, v) {
			t.Errorf("queue-proxy env %q lacks %s", env, v)
		}
	}
	other := spec
	other.timeouts.Idle = nil
	if spec.sameProcess(other) {
		t.Error("a changed timeout keeps the replicas; want them replaced")
	}
}

// TestLoadKnativeRefused: a Knative Service with a field Ebb cannot honour
// is refused, and the error names the field (the load fails as a whole, as
// for an invalid annotation: the running revisions stay).
func TestLoadKnativeRefused(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "ksvc.yaml", knativeService+"  traffic: [{tag: canary, percent: 100}]\n")
	write(t, dir, "app.yaml", strings.Replace(strings.Replace(strings.Replace(deployment, "%s", "app", 1), "%s", "true", 1), "%s", `["./server"]`, 1))
	files, err := manifestFiles([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	st, err := load(files, dir)
	if err == nil || !strings.Contains(err.Error(), `spec.traffic[0].tag: "canary"`) {
		t.Errorf("load: %v; want the tag refused", err)
	}
	if st == nil || len(st.revisions) != 1 {
		t.Errorf("state %+v; want the Deployment alone beside the error (the load as a whole fails, as for a bad annotation)", st)
	}
}

// TestLoadDeployLocal: `make run`'s manifests load, the Knative sample
// among the revisions.
func TestLoadDeployLocal(t *testing.T) {
	files, err := manifestFiles([]string{"../../../deploy/local"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := load(files, "/work")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range st.revisions {
		keys = append(keys, k.String())
	}
	slices.Sort(keys)
	if diff := cmp.Diff([]string{"default/grpchello", "default/hello", "default/hello-knative", "default/php-apache"}, keys); diff != "" {
		t.Errorf("revisions (-want +got):\n%s", diff)
	}
	kn := st.revisions[autoscaler.RevisionKey{Namespace: "default", Name: "hello-knative"}]
	if kn.concurrency != 10 || !slices.Equal(kn.argv, []string{"bin/hello", "--latency=100ms", "--startup-delay=300ms"}) || len(st.warnings) > 0 {
		t.Errorf("hello-knative: concurrency %d, argv %q, warnings %q", kn.concurrency, kn.argv, st.warnings)
	}
}

// TestLocalWarnings: what the local platform does not run is named.
func TestLocalWarnings(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "ksvc.yaml", strings.Replace(knativeService, "          env: [{name: GREETING, value: hi}]\n",
		"          env: [{name: GREETING, value: hi}, {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]\n"+
			"          envFrom: [{configMapRef: {name: c}}]\n", 1)+
		"      volumes: [{name: data, emptyDir: {}}]\n      initContainers: [{name: init, image: x}]\n"+
		"---\napiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: h}\nspec: {maxReplicas: 2}\n")
	st, err := load([]string{filepath.Join(dir, "ksvc.yaml")}, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"autoscaling/v2 HorizontalPodAutoscaler default/h is not read", "spec.template.metadata.name:",
		"spec.template.spec.volumes: 1 volumes are not mounted locally",
		"spec.template.spec.initContainers: 1 init containers", "spec.template.spec.containers[0].env[1] (POD): valueFrom",
		"spec.template.spec.containers[0].envFrom:"}
	if len(st.warnings) != len(want) {
		t.Fatalf("warnings %q; want %d", st.warnings, len(want))
	}
	for i, w := range want {
		if !strings.Contains(st.warnings[i], w) {
			t.Errorf("warning %d = %q; want it to contain %q", i, st.warnings[i], w)
		}
	}
}
