package reconciler

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster/clustertest"
)

// TestSetDeletionCosts: each pod gets controller.kubernetes.io/pod-deletion-cost
// from its requests in flight (the busiest the highest, an unknown load
// 0), and a cost already written is not written again.
func TestSetDeletionCosts(t *testing.T) {
	d := clustertest.Deployment("hello", 3, nil)
	l := &patchLog{}
	h := startWith(t, Options{}, l.reactors, d, clustertest.ReadyPod("hello", "hello-1", "10.0.0.1"),
		clustertest.ReadyPod("hello", "hello-2", "10.0.0.2"), clustertest.ReadyPod("hello", "hello-3", "10.0.0.3"))
	<-h.p.Ready()
	eventually(t, "the pods in the cache", func() bool { return len(h.p.inf.podsOf(d)) == 3 })
	ctx := context.Background()
	key := autoscaler.RevisionKey{Namespace: "default", Name: "hello"}
	loads := []autoscaler.PodLoad{{Name: "hello-1", InFlight: 0.2, Known: true}, {Name: "hello-2", InFlight: 7, Known: true},
		{Name: "hello-3", InFlight: 9, Known: false}}
	if err := h.p.SetDeletionCosts(ctx, key, loads); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, name := range []string{"hello-1", "hello-2", "hello-3"} {
		pod, err := h.client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got[name] = pod.Annotations[corev1.PodDeletionCost]
	}
	if diff := cmp.Diff(map[string]string{"hello-1": "20", "hello-2": "700", "hello-3": "0"}, got); diff != "" {
		t.Errorf("deletion costs (-want +got):\n%s", diff)
	}
	n := len(l.patches)
	loads[0].InFlight = 3
	if err := h.p.SetDeletionCosts(ctx, key, loads); err != nil {
		t.Fatal(err)
	}
	if sent := l.patches[n:]; len(sent) != 1 || sent[0].pod != "hello-1" || sent[0].subresource != "" {
		t.Errorf("patches %+v; want one, of hello-1 (the others unchanged)", sent)
	}
}
