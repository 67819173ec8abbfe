package local

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/activator"
	"ebb.dev/ebb/pkg/autoscaler"
)

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: prod, labels: {autoscaling.ebb.dev/enabled: "%s"}}
spec:
  selector: {matchLabels: {app: x}}
  template:
    metadata:
      labels: {app: x}
      annotations: {autoscaling.ebb.dev/container-concurrency: "4", autoscaling.ebb.dev/load-balancing: round-robin}
    spec:
      containers:
        - name: app
          image: ignored
          command: %s
          args: ["--flag"]
          env: [{name: GREETING, value: hi}, {name: PORT, value: "1"}]
          readinessProbe: {httpGet: {path: /ready, port: 8080}}
          resources: {requests: {cpu: 100m, memory: 64Mi}}
`

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "config.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: config-autoscaler, namespace: ebb-system}\ndata: {stable-window: 30s}\n")
	write(t, dir, "app.yaml", strings.Replace(strings.Replace(strings.Replace(deployment, "%s", "app", 1), "%s", "true", 1), "%s", `["./server"]`, 1))
	write(t, dir, "other.yaml", strings.Replace(strings.Replace(strings.Replace(deployment, "%s", "other", 1), "%s", "false", 1), "%s", `["x"]`, 1))
	write(t, dir, "notes.txt", "not a manifest")
	files, err := manifestFiles([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Fatalf("files %v: want the three YAML files", files)
	}
	st, err := load(files, "/work")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"stable-window": "30s"}, st.config); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"prod/other"}, st.skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	spec := st.revisions[autoscaler.RevisionKey{Namespace: "prod", Name: "app"}]
	want := revSpec{argv: []string{"./server", "--flag"}, env: []string{"GREETING=hi"}, dir: "/work", probePath: "/ready",
		upstream: "http1", concurrency: 4, lb: activator.LBRoundRobin, container: "app", cpuRequest: 0.1, memRequest: 64 << 20}
	got := revSpec{argv: spec.argv, env: spec.env, dir: spec.dir, probePath: spec.probePath, upstream: spec.upstream, concurrency: spec.concurrency, lb: spec.lb,
		container: spec.container, cpuRequest: spec.cpuRequest, memRequest: spec.memRequest}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(revSpec{})); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	before := fingerprint(files)
	write(t, dir, "config.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: config-autoscaler}\ndata: {stable-window: 31s}\n")
	if fingerprint(files) == before {
		t.Error("fingerprint did not change with the file")
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{"no command", strings.Replace(strings.Replace(strings.Replace(deployment, "%s", "a", 1), "%s", "true", 1),
			"          command: %s\n          args: [\"--flag\"]\n", "", 1),
			"has no command; locally the image is ignored"},
		{"not YAML", "{", "document 1"},
		{
			"two ConfigMaps",
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: config-autoscaler}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: config-autoscaler}\n",
			"keep one",
		},
		{"bad container-concurrency",
			strings.Replace(strings.Replace(strings.Replace(strings.Replace(deployment, "%s", "a", 1), "%s", "true", 1), "%s", `["x"]`, 1),
				`container-concurrency: "4"`, `container-concurrency: "many"`, 1),
			`annotation "autoscaling.ebb.dev/container-concurrency" = "many": must be a whole number`},
		{"bad load-balancing",
			strings.Replace(strings.Replace(strings.Replace(strings.Replace(deployment, "%s", "a", 1), "%s", "true", 1), "%s", `["x"]`, 1),
				`load-balancing: round-robin`, `load-balancing: fastest`, 1),
			`annotation "autoscaling.ebb.dev/load-balancing" = "fastest": must be auto, power-of-two-choices`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "m.yaml", tc.content)
			_, err := load([]string{filepath.Join(dir, "m.yaml")}, dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("load: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := New(Options{}); err == nil || !strings.Contains(err.Error(), "no manifest path") {
		t.Errorf("New without paths: %v", err)
	}
}

// TestUpstreamFromPortName: a container port named h2c (Knative's signal)
// makes the replica's queue-proxy speak h2c to the app; any other name, or
// no port, keeps http1; the upstream-protocol annotation wins over both.
func TestUpstreamFromPortName(t *testing.T) {
	p, err := New(Options{Paths: []string{"x"}, QueueProxy: "qp"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, ann, ports, want string }{
		{"no port", "", "", "QUEUE_UPSTREAM_PROTOCOL=http1"},
		{"port named h2c", "", "          ports: [{name: h2c, containerPort: 8080}]\n", "QUEUE_UPSTREAM_PROTOCOL=h2c"},
		{"port named http1", "", "          ports: [{name: http1, containerPort: 8080}]\n", "QUEUE_UPSTREAM_PROTOCOL=http1"},
		{"unnamed port", "", "          ports: [{containerPort: 8080}]\n", "QUEUE_UPSTREAM_PROTOCOL=http1"},
		{"annotation h2c", "h2c", "", "QUEUE_UPSTREAM_PROTOCOL=h2c"},
		{"annotation http1 over a port named h2c", "http1", "          ports: [{name: h2c, containerPort: 8080}]\n", "QUEUE_UPSTREAM_PROTOCOL=http1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			m := strings.Replace(strings.Replace(strings.Replace(deployment, "%s", "app", 1), "%s", "true", 1), "%s", `["./server"]`, 1)
			if tt.ann != "" {
				m = strings.Replace(m, "round-robin}", "round-robin, autoscaling.ebb.dev/upstream-protocol: "+tt.ann+"}", 1)
			}
			write(t, dir, "app.yaml", m+tt.ports)
			files, err := manifestFiles([]string{dir})
			if err != nil {
				t.Fatal(err)
			}
			st, err := load(files, "/work")
			if err != nil {
				t.Fatal(err)
			}
			spec := st.revisions[autoscaler.RevisionKey{Namespace: "prod", Name: "app"}]
			env := p.queueProxyEnv(spec, &replica{name: "r"})
			if !slices.Contains(env, tt.want) {
				t.Errorf("queue-proxy env %q lacks %q", env, tt.want)
			}
		})
	}
}
