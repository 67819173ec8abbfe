//go:build k8s

package k8s

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/revisionstatus"
)

// TestRevisionAutoscalerStatus: a revision going from zero up under load
// and back to zero shows in `kubectl get ra` (its columns) and `kubectl
// describe ra` (conditions and reasons); every replica count the
// autoscaler applied appears in the RevisionAutoscaler within 2 s.
func TestRevisionAutoscalerStatus(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "ra")
	createApp(t, appDeployment(t, ns, "ra", map[string]string{"autoscaling.knative.dev/initial-scale": "0"}))
	dyn, err := dynamic.NewForConfig(env.rest)
	if err != nil {
		t.Fatal(err)
	}
	shown := func() (int64, bool) {
		o, err := dyn.Resource(revisionstatus.GVR).Namespace(ns).Get(ctx, "ra", metav1.GetOptions{})
		if err != nil {
			return 0, false
		}
		d, ok, _ := unstructured.NestedInt64(o.Object, "status", "desiredReplicas")
		return d, ok
	}
	waitFor(t, 30*time.Second, "the RevisionAutoscaler at zero", func() (bool, string) {
		d, ok := shown()
		return ok && d == 0, fmt.Sprintf("desired %d (%v)", d, ok)
	})

	// Watch both: each replica count the Deployment takes, and when the
	// RevisionAutoscaler shows it.
	var (
		mu   sync.Mutex
		lags []string
		bad  []string
	)
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		last, since := int32(-1), time.Time{}
		pending := false
		for {
			select {
			case <-stopWatch:
				return
			case <-time.After(100 * time.Millisecond):
			}
			n, err := replicas(ctx, ns, "ra")
			if err != nil {
				continue
			}
			now := time.Now()
			if n != last {
				if pending && now.Sub(since) > 2*time.Second { // a count replaced sooner need not be shown
					mu.Lock()
					bad = append(bad, fmt.Sprintf("%d (for %v) never shown", last, now.Sub(since).Round(time.Millisecond)))
					mu.Unlock()
				}
				last, since, pending = n, now, true
			}
			if d, ok := shown(); pending && ok && d == int64(last) {
				lag := time.Since(since)
				mu.Lock()
				lags = append(lags, fmt.Sprintf("%d after %v", last, lag.Round(10*time.Millisecond)))
				if lag > 2*time.Second {
					bad = append(bad, fmt.Sprintf("%d shown %v after the scale", last, lag.Round(10*time.Millisecond)))
				}
				mu.Unlock()
				pending = false
			}
		}
	}()

	rc := newRouteClient(t, env.client, ns, "ra")
	res, stop := rc.runLoad(50)
	waitFor(t, 60*time.Second, "at least 3 replicas shown", func() (bool, string) {
		d, _ := shown()
		return d >= 3, fmt.Sprintf("shown %d; load %s", d, res)
	})
	out, err := kubectl("get", "ra", "-n", ns)
	if err != nil {
		t.Fatalf("kubectl get ra: %v\n%s", err, out)
	}
	t.Logf("kubectl get ra under load:\n%s", out)
	for _, col := range []string{"NAME", "DESIRED", "READY", "METRIC", "VALUE", "TARGET", "PANIC", "ACTIVATOR", "AGE", "ra ", "concurrency"} {
		if !strings.Contains(out, col) {
			t.Errorf("kubectl get ra lacks %q", col)
		}
	}
	stop()
	waitFor(t, 60*time.Second, "the RevisionAutoscaler back at zero", func() (bool, string) {
		d, _ := shown()
		n, _ := replicas(ctx, ns, "ra")
		return d == 0 && n == 0, fmt.Sprintf("shown %d, replicas %d", d, n)
	})
	time.Sleep(500 * time.Millisecond)
	close(stopWatch)
	<-watched
	out, err = kubectl("describe", "ra", "-n", ns, "ra")
	if err != nil {
		t.Fatalf("kubectl describe ra: %v\n%s", err, out)
	}
	t.Logf("kubectl describe ra at zero:\n%s", out)
	for _, want := range []string{"Active", "ScaleTargetInitialized", "Ready", "AbleToScale", "ScalingActive", "ScalingLimited", "Last Reasons", "ScaledToZero"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl describe ra lacks %q", want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("replica counts shown: %s", strings.Join(lags, ", "))
	for _, b := range bad {
		t.Errorf("replica count %s", b)
	}
}

// TestRevisionAutoscalerGoesWithItsRevision: each RevisionAutoscaler is
// owned by its Deployment; deleting the Deployment deletes it (Kubernetes'
// garbage collector, or the autoscaler), and so does removing the opt-in
// label (the autoscaler: the Deployment stays).
func TestRevisionAutoscalerGoesWithItsRevision(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "ragone")
	for _, name := range []string{"gone", "optout"} {
		createApp(t, appDeployment(t, ns, name, map[string]string{"autoscaling.knative.dev/initial-scale": "0"}))
	}
	dyn, err := dynamic.NewForConfig(env.rest)
	if err != nil {
		t.Fatal(err)
	}
	ras := dyn.Resource(revisionstatus.GVR).Namespace(ns)
	for _, name := range []string{"gone", "optout"} {
		d, err := env.client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "RevisionAutoscaler "+name+" owned by its Deployment", func() (bool, string) {
			o, err := ras.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			refs := o.GetOwnerReferences()
			return len(refs) == 1 && refs[0].Kind == "Deployment" && refs[0].Name == name && refs[0].UID == d.UID,
				fmt.Sprintf("owner references %+v (the Deployment's UID %s)", refs, d.UID)
		})
	}
	gone := func(name string) func() (bool, string) {
		return func() (bool, string) {
			_, err := ras.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprintf("get: %v", err)
		}
	}

	start := time.Now()
	if err := env.client.AppsV1().Deployments(ns).Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the deleted Deployment's RevisionAutoscaler deleted", gone("gone"))
	t.Logf("the deleted Deployment's RevisionAutoscaler was gone after %v", time.Since(start).Round(100*time.Millisecond))

	start = time.Now()
	patch := []byte(`{"metadata": {"labels": {"` + config.LabelEnabled + `": null}}}`)
	if _, err := env.client.AppsV1().Deployments(ns).Patch(ctx, "optout", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the opted-out Deployment's RevisionAutoscaler deleted", gone("optout"))
	t.Logf("the opted-out Deployment's RevisionAutoscaler was gone after %v", time.Since(start).Round(100*time.Millisecond))
	if _, err := env.client.AppsV1().Deployments(ns).Get(ctx, "optout", metav1.GetOptions{}); err != nil {
		t.Errorf("the opted-out Deployment: %v, want it left alone", err)
	}
}
