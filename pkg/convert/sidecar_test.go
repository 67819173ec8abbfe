package convert

import (
	"bytes"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"ebb.dev/ebb/pkg/manifest"
)

// TestSidecarIsTheDocsLongForm: convert's long form of
// deploy/kubernetes/example-app.yaml's short form is the long form of
// docs/kubernetes.md, pod spec for pod spec (deploy/kubernetes's
// TestLongFormIsTheInjection checks the webhook against the same block).
func TestSidecarIsTheDocsLongForm(t *testing.T) {
	data, err := os.ReadFile("../../deploy/kubernetes/example-app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	set, err := manifest.Decode("example-app.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Deployments) != 1 {
		t.Fatalf("%d Deployments in example-app.yaml, want 1", len(set.Deployments))
	}
	short := set.Deployments[0].Object.DeepCopy()
	if _, err := addSidecar(short, DefaultQueueProxyImage); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile("../../docs/kubernetes.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok1 := bytes.Cut(md, []byte("<!-- long-form:begin -->\n```yaml\n"))
	block, _, ok2 := bytes.Cut(rest, []byte("```\n<!-- long-form:end -->"))
	if !ok1 || !ok2 {
		t.Fatal("docs/kubernetes.md has no long-form block")
	}
	var long appsv1.Deployment
	if err := yaml.UnmarshalStrict(block, &long); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(long.Spec.Template.Spec, short.Spec.Template.Spec); diff != "" {
		t.Errorf("pod spec (-docs/kubernetes.md +convert --sidecar):\n%s", diff)
	}
}
