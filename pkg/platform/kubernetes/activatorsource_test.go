package kubernetes

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"ebb.dev/ebb/pkg/activator"
)

func TestActivatorSourceView(t *testing.T) {
	d := deployment("hello", 2, map[string]string{ContainerConcurrencyAnnotation: "10", activator.AnnotationLoadBalancing: "round-robin"})
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app"},
		{Name: "queue-proxy", Env: []corev1.EnvVar{{Name: "REVISION_TIMEOUT_SECONDS", Value: "30"}}}}
	bad := deployment("bad", 1, map[string]string{ContainerConcurrencyAnnotation: "many", activator.AnnotationLoadBalancing: "fastest"})
	starting := readyPod("hello", "hello-2", "10.0.0.2")
	starting.Status.Conditions[0].Status = corev1.ConditionFalse
	client := fake.NewClientset(d, bad, readyPod("hello", "hello-1", "10.0.0.1"), starting,
		readyPod("other", "other-1", "10.0.0.9"), activatorSlice("10.1.0.1", "10.1.0.2", "10.1.0.3"))
	s, err := NewActivatorSource(Options{Client: client})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	views := make(chan []activator.Revision, 16)
	go s.Watch(ctx, func(rs []activator.Revision) { views <- rs })
	lb, _ := activator.ParseLoadBalancing("round-robin")
	want := []activator.Revision{
		{Namespace: "default", Name: "bad", Timeout: 300 * time.Second, Activators: 3},
		{Namespace: "default", Name: "hello", ContainerConcurrency: 10, Timeout: 30 * time.Second, LoadBalancing: lb, Activators: 3,
			Replicas: []activator.Replica{{Address: "10.0.0.1:8012", Ready: true}, {Address: "10.0.0.2:8012"}}}}
	deadline := time.After(5 * time.Second)
	var last []activator.Revision
	for {
		select {
		case last = <-views:
			if cmp.Diff(want, last) == "" {
				return
			}
		case <-deadline:
			t.Fatalf("last view (-want +got):\n%s", cmp.Diff(want, last))
		}
	}
}
