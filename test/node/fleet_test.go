//go:build node

package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ebb.dev/ebb/pkg/autoscaler/bucket"
	"ebb.dev/ebb/pkg/config"
)

// buckets is deploy/'s bucket count (the autoscalers' --buckets).
const buckets = 10

// TestAutoscalerPodDeletedUnderLoad: the autoscaler pod holding a busy
// revision's bucket is deleted (kubectl delete pod: the kubelet's SIGTERM)
// while hey sends through the activator's Service: its buckets move to
// the other replica, the revision keeps being decided (it scales on), and
// hey sees only 200s. The Deployment's replacement pod then rejoins.
func TestAutoscalerPodDeletedUnderLoad(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "node-fleet")
	d := helloCopy(t, ns, "fleet", map[string]string{config.AnnotationWindow: "6s", "autoscaling.knative.dev/min-scale": "1"})
	createDeployment(t, d)
	waitReady(t, ns, d.Name, 1, 120*time.Second)
	lease := bucket.Name(config.AutoscalerName, bucket.Of(ns+"/"+d.Name, buckets), buckets)
	holder := func() string {
		l, err := env.client.CoordinationV1().Leases(config.SystemNamespace).Get(ctx, lease, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	victim := holder()
	if victim == "" {
		t.Fatalf("no holder of %s", lease)
	}
	held := func(id string) int {
		ls, err := env.client.CoordinationV1().Leases(config.SystemNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return -1
		}
		n := 0
		for _, l := range ls.Items {
			if _, _, ok := bucket.Parse(config.AutoscalerName, l.Name); ok && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == id {
				n++
			}
		}
		return n
	}
	victimHeld := held(victim)
	wait, _ := startHey(t, env.activator, host(ns, d.Name), 30, 40*time.Second)
	time.Sleep(10 * time.Second)
	deleted := time.Now()
	if err := env.client.CoreV1().Pods(config.SystemNamespace).Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the deleted replica's buckets held by another", func() (bool, string) {
		h := holder()
		return h != "" && h != victim && held(victim) == 0, fmt.Sprintf("%s held by %q; %d buckets still %s's", lease, h, held(victim), victim)
	})
	moved := time.Since(deleted)
	r := wait()
	s, err := stateOf(ctx, ns, d.Name)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("node: autoscaler pod deleted under load: its %d buckets moved %v after the delete; hey 30 clients 40 s: %s; revision at %s (load average %s)\n",
		victimHeld, moved.Round(100*time.Millisecond), r, s, loadAvg())
	if !r.only200() {
		t.Errorf("hey saw other than 200s: %s", r)
	}
	if s.ready < 2 {
		t.Errorf("the revision did not scale out under 30 clients (%s): its new holder does not decide for it", s)
	}
	waitFor(t, 120*time.Second, "two ready autoscalers again", func() (bool, string) {
		dep, err := env.client.AppsV1().Deployments(config.SystemNamespace).Get(ctx, config.AutoscalerName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return dep.Status.ReadyReplicas == 2 && dep.Status.Replicas == 2, fmt.Sprintf("%d ready of %d", dep.Status.ReadyReplicas, dep.Status.Replicas)
	})
}
