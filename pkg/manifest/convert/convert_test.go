package convert

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/manifest"
	"ebb.dev/ebb/pkg/platform/kubernetes/reconciler"

	"ebb.dev/ebb/internal/golden"
)

// convertFile converts one file of testdata and renders the outcome: the
// YAML, or the errors one per line after "# error".
func convertFile(t *testing.T, path string, o Options) string {
	t.Helper()
	res, err := convertPath(t, path, o)
	if err != nil {
		return "# error\n" + err.Error() + "\n"
	}
	var b bytes.Buffer
	for _, w := range res.Warnings {
		b.WriteString("# warning: " + w + "\n")
	}
	if err := res.WriteYAML(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// convertPath reads and converts one file.
func convertPath(t *testing.T, path string, o Options) (*Result, error) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	set, err := manifest.Decode(filepath.Base(path), data)
	if err != nil {
		t.Fatal(err)
	}
	return Convert(set, o)
}

// TestGolden converts the corpus of testdata (Knative's samples, the HPA
// walkthrough's php-apache) in both forms and compares the output with
// testdata/NAME.golden.yaml and NAME.sidecar.golden.yaml (rewritten by
// -update).
func TestGolden(t *testing.T) {
	inputs, _ := filepath.Glob("testdata/*.yaml")
	n := 0
	for _, in := range inputs {
		if strings.Contains(in, ".golden.") {
			continue
		}
		n++
		for _, form := range []struct {
			suffix string
			o      Options
		}{{".golden.yaml", Options{}}, {".sidecar.golden.yaml", Options{Sidecar: true}}} {
			goldenPath := strings.TrimSuffix(in, ".yaml") + form.suffix
			t.Run(filepath.Base(goldenPath), func(t *testing.T) {
				golden.Check(t, goldenPath, []byte(convertFile(t, in, form.o)))
			})
		}
	}
	if n < 6 {
		t.Errorf("%d inputs in testdata; want the corpus of 6", n)
	}
}

// TestErrors: what cannot be converted is an error naming the object, the
// field and the fix; nothing is written.
func TestErrors(t *testing.T) {
	const dep = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {a: b}}\n" +
		"  template:\n    metadata:\n      labels: {a: b}\n%s    spec: {containers: [{name: web, image: x}]}\n"
	hpa := func(spec string) string {
		return "---\napiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: web}\nspec:\n" + spec
	}
	withDep := func(anns string) string { return strings.Replace(dep, "%s", anns, 1) }
	ref := "  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n"
	tests := []struct {
		name, in string
		o        Options
		want     []string
	}{
		{name: "no target", in: hpa(ref + "  maxReplicas: 3\n"),
			want: []string{"HorizontalPodAutoscaler default/web at f.yaml:2 (document 1): spec.scaleTargetRef: " +
				"Deployment default/web is not among the inputs; give its manifest too"}},
		{name: "a StatefulSet", in: hpa("  scaleTargetRef: {apiVersion: apps/v1, kind: StatefulSet, name: web}\n  maxReplicas: 3\n"),
			want: []string{"spec.scaleTargetRef: apps/v1 StatefulSet \"web\": Ebb scales apps/v1 Deployments only"}},
		{name: "two HPAs", in: withDep("") + hpa(ref+"  maxReplicas: 3\n") + hpa(ref+"  maxReplicas: 4\n"),
			want: []string{"is also the target of autoscaling/v2 HorizontalPodAutoscaler default/web"}},
		{name: "zero min", in: withDep("") + hpa(ref+"  minReplicas: 0\n  maxReplicas: 3\n"),
			want: []string{"spec.minReplicas: 0: Ebb's HPA class keeps at least one pod"}},
		{name: "an annotation the HPA sets", in: withDep("      annotations: {autoscaling.knative.dev/max-scale: \"3\"}\n") + hpa(ref+"  maxReplicas: 3\n"),
			want: []string{`already has the annotation autoscaling.knative.dev/max-scale = "3", which the HPA sets`}},
		{name: "a Pods metric", in: withDep("") + hpa(ref+"  maxReplicas: 3\n  metrics:\n  - type: Pods\n    pods:\n"+
			"      metric: {name: packets-per-second}\n      target: {type: AverageValue, averageValue: 1k}\n"),
			want: []string{"spec.metrics[0]: type Pods: Ebb's HPA class reads cpu and memory"}},
		{name: "an External metric and storage", in: withDep("") + hpa(ref+"  maxReplicas: 3\n  metrics:\n  - type: External\n    external:\n"+
			"      metric: {name: queue}\n      target: {type: Value, value: \"30\"}\n  - type: Resource\n    resource:\n"+
			"      name: ephemeral-storage\n      target: {type: Utilization, averageUtilization: 50}\n"),
			want: []string{"spec.metrics[0]: type External:", `spec.metrics[1].resource.name: "ephemeral-storage": Ebb's HPA class reads cpu and memory`}},
		{name: "a Value target", in: withDep("") + hpa(ref+"  maxReplicas: 3\n  metrics:\n  - type: Resource\n    resource:\n"+
			"      name: cpu\n      target: {type: Value, value: \"1\"}\n"),
			want: []string{"spec.metrics[0].resource.target: type Value: a resource metric takes Utilization"}},
		{name: "a Knative traffic split", in: "apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: k}\n" +
			"spec:\n  template: {spec: {containers: [{image: x}]}}\n  traffic: [{percent: 50, tag: a}, {percent: 50, revisionName: k-1}]\n",
			want: []string{`Knative Service default/k at f.yaml:1 (document 1): spec.traffic[0].tag: "a"`,
				"spec.traffic[0].percent: 50", `spec.traffic[1].revisionName: "k-1"`, "spec.traffic[1].percent: 50"}},
		{name: "a timeout variable in a Knative container", in: "apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: k}\n" +
			"spec:\n  template: {spec: {containers: [{image: x, env: [{name: A, value: b}, {name: REVISION_IDLE_TIMEOUT_SECONDS, value: \"9\"}]}]}}\n",
			want: []string{"spec.template.spec.containers[0].env[1]: REVISION_IDLE_TIMEOUT_SECONDS is the queue-proxy's timeout variable"}},
		{name: "two revisions of one name", in: withDep("") + "---\napiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: web}\n" +
			"spec: {template: {spec: {containers: [{image: x}]}}}\n",
			want: []string{"Knative Service default/web at f.yaml:11 (document 2): Deployment at f.yaml:1 (document 1) has the same namespace and name"}},
		{name: "a Service Ebb owns", in: "apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: k}\n" +
			"spec: {template: {spec: {containers: [{image: x}]}}}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: k-private}\n",
			want: []string{"v1 Service default/k-private at f.yaml:6 (document 2): Ebb creates and owns the Services k and k-private " +
				"of the revision converted from Knative Service default/k"}},
		{name: "the app on the queue-proxy's port, in the short form too", in: "apiVersion: serving.knative.dev/v1\nkind: Service\n" +
			"metadata: {name: k}\nspec:\n  template: {spec: {containers: [{image: x, ports: [{containerPort: 8012}]}]}}\n",
			want: []string{"Knative Service default/k at f.yaml:1 (document 1): spec.template: spec.containers[0]: " +
				"the app's port 8012 is reserved for the queue-proxy"}},
		{name: "a container named queue-proxy", in: "apiVersion: serving.knative.dev/v1\nkind: Service\n" +
			"metadata: {name: k}\nspec:\n  template: {spec: {containers: [{name: queue-proxy, image: x}]}}\n",
			want: []string{`a container is already named "queue-proxy"; rename the app's container`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := manifest.Decode("f.yaml", []byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			res, err := Convert(set, tt.o)
			if err == nil || res != nil {
				t.Fatalf("Convert: %v, %v; want only an error", res, err)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("%d errors, want %d:\n%s", len(lines), len(tt.want), err)
			}
			for i, w := range tt.want {
				if !strings.Contains(lines[i], w) {
					t.Errorf("error %d = %q; want it to contain %q", i, lines[i], w)
				}
			}
		})
	}
}

// FuzzConvert: whatever decodes either converts to YAML that decodes again
// into as many Deployments, every converted one opted in, or fails with an
// error and no result.
func FuzzConvert(f *testing.F) {
	inputs, _ := filepath.Glob("testdata/*.yaml")
	for _, in := range inputs {
		if data, err := os.ReadFile(in); err == nil && !strings.Contains(in, ".golden.") {
			f.Add(string(data), false)
		}
	}
	f.Fuzz(func(t *testing.T, in string, sidecar bool) {
		set, err := manifest.Decode("fuzz.yaml", []byte(in))
		if err != nil {
			return
		}
		res, err := Convert(set, Options{Sidecar: sidecar})
		if err != nil {
			if res != nil {
				t.Fatal("Convert returned a result and an error")
			}
			return
		}
		var b bytes.Buffer
		if err := res.WriteYAML(&b); err != nil {
			t.Fatalf("WriteYAML: %v", err)
		}
		again, err := manifest.Decode("out.yaml", b.Bytes())
		if err != nil {
			t.Fatalf("the output does not decode: %v\n%s", err, b.String())
		}
		if len(again.Deployments) != len(set.Deployments) {
			t.Fatalf("%d Deployments in, %d out", len(set.Deployments), len(again.Deployments))
		}
		for i, d := range again.Deployments {
			converted := set.Deployments[i].Knative != nil
			if converted && d.Object.Labels[config.LabelEnabled] != "true" {
				t.Errorf("converted Deployment %s is not opted in", d.Name())
			}
			if converted && !sidecar && d.Object.Spec.Template.Labels[config.LabelEnabled] != "true" {
				t.Errorf("converted Deployment %s of the short form: its pod template lacks the label the webhook selects by", d.Name())
			}
		}
	})
}

// TestInjectionLabel: a Knative revision of the short form carries the
// opt-in label on its pod template, which the webhook selects pods by; the
// long form and an HPA-class revision on cpu and memory do not, so the
// Kubernetes platform reads the latter as sidecarless (no queue-proxy, its
// Services left alone) and the webhook never sees their pods.
func TestInjectionLabel(t *testing.T) {
	tests := []struct {
		file            string
		sidecar         bool
		wantLabel       bool
		wantSidecarless bool
	}{
		{file: "helloworld-go.yaml", wantLabel: true},
		{file: "grpc-ping.yaml", wantLabel: true},
		{file: "helloworld-go.yaml", sidecar: true},
		{file: "php-apache-v2.yaml", wantSidecarless: true},
		{file: "php-apache-v1.yaml", sidecar: true, wantSidecarless: true},
		{file: "hpa-behavior.yaml", wantSidecarless: true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s sidecar=%v", tt.file, tt.sidecar), func(t *testing.T) {
			res, err := convertPath(t, "testdata/"+tt.file, Options{Sidecar: tt.sidecar})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, o := range res.Objects {
				d, ok := o.Value.(*appsv1.Deployment)
				if !ok || d.Labels[config.LabelEnabled] != "true" {
					continue
				}
				n++
				if got := d.Spec.Template.Labels[config.LabelEnabled] == "true"; got != tt.wantLabel {
					t.Errorf("%s: template label %v, want %v", d.Name, got, tt.wantLabel)
				}
				if got := reconciler.Sidecarless(d); got != tt.wantSidecarless {
					t.Errorf("%s: sidecarless %v, want %v", d.Name, got, tt.wantSidecarless)
				}
			}
			if n != 1 {
				t.Errorf("%d opted-in Deployments, want 1", n)
			}
		})
	}
}
