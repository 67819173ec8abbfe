//go:build node

package node

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ebb.dev/ebb/pkg/manifest"
	"ebb.dev/ebb/pkg/manifest/convert"
)

// knativeService is a Knative Service as Knative's samples write it (no
// command: the image's entrypoint), with the example app's image.
const knativeService = `apiVersion: serving.knative.dev/v1
kind: Service
metadata:
  name: hello-kn
  namespace: NAMESPACE
spec:
  template:
    metadata:
      annotations:
        autoscaling.knative.dev/window: "6s"
        autoscaling.knative.dev/max-scale: "3"
    spec:
      containerConcurrency: 10
      containers:
        - image: IMAGE
          args: ["--latency=0s"]
`

// TestKnativeServiceWakes: Ebb's Kubernetes platform watches Deployments,
// not serving.knative.dev objects (there is no Knative CRD to apply them
// to): a Knative Service manifest reaches a cluster through autoscaler
// convert (pkg/manifest/convert, docs/knative.md). The converted Deployment gets
// the webhook's queue-proxy in a real pod, goes to zero, and a request
// through the activator's Service wakes it (200).
func TestKnativeServiceWakes(t *testing.T) {
	ns := newNamespace(t, "node-knative")
	hello, err := env.client.AppsV1().Deployments("default").Get(context.Background(), "hello", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	image := ""
	for _, c := range hello.Spec.Template.Spec.Containers {
		if c.Name == "app" {
			image = c.Image
		}
	}
	src := strings.NewReplacer("NAMESPACE", ns, "IMAGE", image).Replace(knativeService)
	set, err := manifest.Decode("hello-kn.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	res, err := convert.Convert(set, convert.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var d *appsv1.Deployment
	for _, o := range res.Objects {
		if v, ok := o.Value.(*appsv1.Deployment); ok {
			d = v
		}
	}
	if d == nil {
		t.Fatalf("autoscaler convert wrote no Deployment: %+v", res.Objects)
	}
	createDeployment(t, d)
	// Up at its initial scale (1), then back at zero.
	waitState(t, ns, d.Name, 120*time.Second, "one ready pod (initial scale)", func(s state) bool { return s.ready == 1 })
	toZeroNow(t, ns, d.Name, 120*time.Second)
	code, ttfb, err := get(context.Background(), env.activator, host(ns, d.Name), 60*time.Second)
	if err != nil || code != 200 {
		t.Fatalf("wake of the Knative Service's Deployment: %d %v", code, err)
	}
	pods, err := env.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: labelSelector(d)})
	if err != nil {
		t.Fatal(err)
	}
	injected := 0
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			if c.Name == "queue-proxy" {
				injected++
			}
		}
	}
	if len(pods.Items) == 0 || injected != len(pods.Items) {
		t.Fatalf("%d pods, %d with the injected queue-proxy", len(pods.Items), injected)
	}
	fmt.Printf("node: Knative Service (converted) woken from zero: 200, first byte after %v (load average %s)\n", ms(ttfb), loadAvg())
}
