package manifest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// summary renders a Set as one line per object, for comparisons.
func summary(s *Set) []string {
	var out []string
	for _, cm := range s.ConfigMaps {
		out = append(out, fmt.Sprintf("ConfigMap %s/%s %v @ %s", cm.Object.Namespace, cm.Object.Name, cm.Object.Data, cm.Origin))
	}
	for _, d := range s.Deployments {
		out = append(out, fmt.Sprintf("Deployment %s/%s %v @ %s", d.Namespace(), d.Name(), d.TemplateAnnotations(), d.Origin))
	}
	for _, ig := range s.Ignored {
		out = append(out, fmt.Sprintf("ignored %s %s %q @ %s", ig.APIVersion, ig.Kind, ig.Name, ig.Origin))
	}
	return out
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr []string // one line per document error
	}{
		{name: "empty file", in: "", want: nil},
		{name: "only comments and separators", in: "# nothing\n---\n---   # still nothing\n", want: nil},
		{name: "several documents", in: `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: config-autoscaler
  namespace: ebb-system
data:
  stable-window: "30s"
--- # the app
apiVersion: apps/v1
kind: Deployment
metadata:
  name: hello
spec:
  template:
    metadata:
      annotations:
        autoscaling.knative.dev/minScale: "1"
---
apiVersion: v1
kind: Service
metadata:
  name: hello
`, want: []string{
			"ConfigMap ebb-system/config-autoscaler map[stable-window:30s] @ f.yaml:2 (document 1)",
			"Deployment default/hello map[autoscaling.knative.dev/minScale:1] @ f.yaml:10 (document 2)",
			`ignored v1 Service "hello" @ f.yaml:20 (document 3)`,
		}},
		{name: "separator-like lines are not separators", in: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  x: |\n    ---x\n    --- y\n",
			want: []string{"ConfigMap /a map[x:---x\n--- y\n] @ f.yaml:1 (document 1)"}},
		{name: "no annotations", in: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: prod}\n",
			want: []string{"Deployment prod/d map[] @ f.yaml:1 (document 1)"}},
		{name: "JSON stream and List", in: `{"apiVersion":"v1","kind":"List","items":[
  {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}},
  {"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"}}]}
{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n"}}`, want: []string{
			"ConfigMap /c map[] @ f.yaml:1 (document 1, item 1)",
			"Deployment default/d map[] @ f.yaml:1 (document 1, item 2)",
			`ignored v1 Namespace "n" @ f.yaml:4 (document 2)`,
		}},
		{name: "JSON array", in: `[{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"}}]`,
			want: []string{"Deployment default/d map[] @ f.yaml:1 (document 1, item 1)"}},
		{name: "flow-style YAML", in: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}}`,
			want: []string{"Deployment default/d map[] @ f.yaml:1 (document 1)"}},
		{name: "every broken document is reported", in: `apiVersion: apps/v1
kind: Deployment
metadata:
  name: a
spec:
  template:
    metadata:
      annotations:
        autoscaling.knative.dev/target: 10
---
kind: ConfigMap
metadata: {name: b}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: c
  annotaions: {}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: d
  data: x
 bad: indentation
---
apiVersion: extensions/v1beta1
kind: Deployment
metadata: {name: e}
---
apiVersion: apps/v1
kind: Deployment
metadata: {namespace: x}
---
just a string
---
apiVersion: v1
kind: ConfigMap
metadata: {name: f}
metadata: {name: g}
`, wantErr: []string{
			`f.yaml:1 (document 1): apps/v1 Deployment: spec.template.metadata.annotations["autoscaling.knative.dev/target"]: 10 is a number but Kubernetes wants a ` +
				`string; quote it: "10"`,
			`f.yaml:11 (document 2): not a Kubernetes object: apiVersion and kind are required`,
			`f.yaml:14 (document 3): apps/v1 Deployment: unknown field "annotaions" (Kubernetes rejects unknown fields: check the spelling and the indentation)`,
			`f.yaml:20 (document 4): invalid YAML: line 24: did not find expected key`,
			`f.yaml:27 (document 5): Deployment has apiVersion "extensions/v1beta1"; want apps/v1`,
			`f.yaml:31 (document 6): apps/v1 Deployment: metadata.name is required`,
			`f.yaml:35 (document 7): not a Kubernetes object: want a mapping with apiVersion and kind`,
			`f.yaml:37 (document 8): invalid YAML: line 40: key "metadata" already set in map`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Decode("f.yaml", []byte(tt.in))
			var gotErr []string
			if err != nil {
				gotErr = strings.Split(err.Error(), "\n")
			}
			if diff := cmp.Diff(tt.wantErr, gotErr); diff != "" {
				t.Fatalf("errors (-want +got):\n%s", diff)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tt.want, summary(s)); diff != "" {
				t.Errorf("Decode (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetMergeAndConfigMapsNamed(t *testing.T) {
	a, err := Decode("a.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: config-autoscaler}\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Decode(
		"b.yaml",
		[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: config-autoscaler, namespace: x}\n"),
	)
	if err != nil {
		t.Fatal(err)
	}
	a.Merge(b)
	var got []string
	for _, cm := range a.ConfigMapsNamed("config-autoscaler") {
		got = append(got, cm.Origin.String())
	}
	want := []string{"a.yaml:1 (document 1)", "b.yaml:5 (document 2)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ConfigMapsNamed (-want +got):\n%s", diff)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n    metadata:\n      annotations: {a: b}\n")
	f.Add("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: config-autoscaler}\ndata: {stable-window: 60s}\n---\n")
	f.Add(`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"}}]}`)
	f.Add("[[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\"}}]]")
	f.Add("a: &x [1, 2]\nb: *x\n")
	f.Add("apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: k}\nspec:\n  template:\n    spec:\n" +
		"      containerConcurrency: 5\n      timeoutSeconds: 10\n      containers: [{image: x, ports: [{name: h2c}]}]\n" +
		"  traffic: [{tag: a, percent: 50}]\n")
	f.Add("apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata: {name: h}\nspec: {maxReplicas: 2, targetCPUUtilizationPercentage: 5}\n")
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Decode("fuzz.yaml", []byte(in))
		if err != nil {
			if s != nil {
				t.Fatal("Decode returned a Set and an error")
			}
			return
		}
		for _, d := range s.Deployments {
			if d.Name() == "" || d.Namespace() == "" || d.TemplateAnnotations() == nil {
				t.Errorf("incomplete Deployment at %s", d.Origin)
			}
			if d.Knative != nil && (len(d.Object.Spec.Template.Spec.Containers) == 0 || d.Object.Labels["autoscaling.ebb.dev/enabled"] != "true") {
				t.Errorf("Knative revision at %s without a container or the opt-in label", d.Origin)
			}
		}
		for _, h := range s.HPAs {
			if h.Name() == "" || h.Object.APIVersion != "autoscaling/v2" && h.APIVersion != "autoscaling/v1" {
				t.Errorf("incomplete HPA at %s", h.Origin)
			}
		}
		for _, cm := range s.ConfigMaps {
			if cm.Object.Name == "" {
				t.Errorf("ConfigMap without a name at %s", cm.Origin)
			}
		}
		again, err := Decode("fuzz.yaml", []byte(in))
		if err != nil {
			t.Fatalf("second Decode failed: %v", err)
		}
		if diff := cmp.Diff(summary(s), summary(again)); diff != "" {
			t.Errorf("Decode is not deterministic (-first +second):\n%s", diff)
		}
	})
}
