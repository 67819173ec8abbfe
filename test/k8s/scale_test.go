//go:build k8s

package k8s

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kplat "ebb.dev/ebb/pkg/platform/kubernetes/reconciler"
)

// TestScaleFromZeroThroughActivator: a revision at zero answers its first
// request: the Service points at the activators, which hold the request,
// wake the autoscaler, and forward it once a pod is up.
func TestScaleFromZeroThroughActivator(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "zero")
	createApp(t, appDeployment(t, ns, "zero", map[string]string{"autoscaling.knative.dev/initial-scale": "0"}))
	waitFor(t, 30*time.Second, "revision zero at 0 replicas behind the activators", func() (bool, string) {
		to, addrs := route(ctx, ns, "zero")
		_, ok, state := status(ctx, ns, "zero")
		return to == kplat.RouteActivator && len(addrs) == activators && ok, fmt.Sprintf("route %s %v; %s", to, addrs, state)
	})
	if n, _ := replicas(ctx, ns, "zero"); n != 0 || readyPods(ctx, ns, "zero") != 0 {
		t.Fatalf("%d replicas, %d ready pods before the first request, want none", n, readyPods(ctx, ns, "zero"))
	}
	acts, _ := serviceAddrs(ctx, env.client, ebbNS, activatorName)

	rc := newRouteClient(t, env.client, ns, "zero")
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	began := time.Now()
	code, addr, err := rc.get(rctx)
	if err != nil || code != http.StatusOK {
		t.Fatalf("first request: status %d, error %v; want 200 (activator log:\n%s)", code, err, logTail(activatorLog(), 20))
	}
	t.Logf("the first request took %v through activator %s", time.Since(began).Round(time.Millisecond), addr)
	if !slices.Contains(acts, addr) {
		t.Errorf("the first request went to %s, want one of the activators %v", addr, acts)
	}
	e, seen := findEvent(ctx, ns, "Deployment", "zero", corev1.EventTypeNormal, "", "scaled from 0 to 1")
	if e == nil {
		t.Fatalf("no Event for the scale from 0 to 1: %s", seen)
	}
	t.Logf("Event: %s %s", e.Reason, e.Message)
	if e.Reason == "" || e.Reason == "Scaled" {
		t.Errorf("Event reason %q: want the decision's reason code", e.Reason)
	}
}

// TestScaleUpUnderLoad: 30 clients on a target of 10 per pod scale the
// revision to at least 3 pods; with target-burst-capacity 0 the Service
// then points at the pods directly; no request fails.
func TestScaleUpUnderLoad(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "load")
	createApp(t, appDeployment(t, ns, "load", map[string]string{"autoscaling.knative.dev/target-burst-capacity": "0"}))
	waitFor(t, 30*time.Second, "one pod behind the Service (initial scale 1, activator out of the path)", func() (bool, string) {
		to, addrs := route(ctx, ns, "load")
		return to == kplat.RoutePods && len(addrs) == 1, fmt.Sprintf("route %s %v", to, addrs)
	})
	rc := newRouteClient(t, env.client, ns, "load")
	res, stop := rc.runLoad(30)
	defer stop()
	waitFor(t, 40*time.Second, "at least 3 ready pods, all behind the Service", func() (bool, string) {
		n, _ := replicas(ctx, ns, "load")
		ready := readyPods(ctx, ns, "load")
		to, addrs := route(ctx, ns, "load")
		return n >= 3 && ready >= 3 && to == kplat.RoutePods && len(addrs) == ready,
			fmt.Sprintf("%d replicas, %d ready, route %s %v; load %s", n, ready, to, addrs, res)
	})
	time.Sleep(3 * time.Second) // the new pods serve
	stop()
	t.Logf("load: %s", res)
	if res.failed.Load() != 0 || res.ok.Load() == 0 {
		t.Errorf("load: %s; want every request to succeed", res)
	}
	e, seen := findEvent(ctx, ns, "Deployment", "load", corev1.EventTypeNormal, "", "scaled from 1 to")
	if e == nil {
		t.Fatalf("no Event for the scale up: %s", seen)
	}
	t.Logf("Event: %s %s", e.Reason, e.Message)
}

// TestScaleToZeroActivatorFirst: when the load is gone the Service is
// pointed at the activators first, and the Deployment goes to zero only
// scale-to-zero-grace-period later; nothing is sent to a pod that is
// going away, and the next request wakes the revision again.
func TestScaleToZeroActivatorFirst(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "idle")
	createApp(t, appDeployment(t, ns, "idle", map[string]string{"autoscaling.knative.dev/target-burst-capacity": "0"}))
	waitFor(t, 30*time.Second, "one pod behind the Service", func() (bool, string) {
		to, addrs := route(ctx, ns, "idle")
		return to == kplat.RoutePods && len(addrs) == 1, fmt.Sprintf("route %s %v", to, addrs)
	})
	tl := watchTimeline(t, ns, "idle")
	began := time.Now()
	waitFor(t, 60*time.Second, "the revision at zero", func() (bool, string) {
		n, _ := replicas(ctx, ns, "idle")
		to, addrs := route(ctx, ns, "idle")
		return n == 0 && to == kplat.RouteActivator, fmt.Sprintf("%d replicas, route %s %v", n, to, addrs)
	})
	t.Logf("idle revision at zero %v after its pod was up; timeline: %s", time.Since(began).Round(time.Second), tl)
	toActivator, toZero := tl.routeAt(kplat.RouteActivator), tl.replicasAt(0)
	if toActivator.IsZero() || toZero.IsZero() {
		t.Fatalf("timeline %s: want a switch to the activator and a scale to 0", tl)
	}
	grace := 6 * time.Second // suiteConfig's scale-to-zero-grace-period
	if gap := toZero.Sub(toActivator); gap < grace-time.Second {
		t.Errorf("scaled to zero %v after the Service pointed at the activators, want at least the grace period %v (timeline %s)", gap, grace, tl)
	}
	if _, addrs := route(ctx, ns, "idle"); len(addrs) != activators {
		t.Errorf("at zero the Service points at %v, want the %d activators", addrs, activators)
	}
	e, seen := findEvent(ctx, ns, "Deployment", "idle", corev1.EventTypeNormal, "", "scaled from 1 to 0")
	if e == nil {
		t.Fatalf("no Event for the scale to zero: %s", seen)
	}
	t.Logf("Event: %s %s", e.Reason, e.Message)

	rc := newRouteClient(t, env.client, ns, "idle")
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if code, addr, err := rc.get(rctx); err != nil || code != http.StatusOK {
		t.Errorf("request at zero via %s: status %d, error %v; want 200", addr, code, err)
	}
}

// timeline records when a revision's route and replicas changed, as seen
// by a watch.
type timeline struct {
	mu     sync.Mutex
	routes []stamp
	scales []stamp
}

type stamp struct {
	at    time.Time
	value string
}

func (tl *timeline) String() string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var b strings.Builder
	for _, s := range tl.routes {
		fmt.Fprintf(&b, "[route %s at %s] ", s.value, s.at.Format("15:04:05.000"))
	}
	for _, s := range tl.scales {
		fmt.Fprintf(&b, "[replicas %s at %s] ", s.value, s.at.Format("15:04:05.000"))
	}
	return b.String()
}

func (tl *timeline) routeAt(v string) time.Time { return tl.first(&tl.routes, v) }
func (tl *timeline) replicasAt(n int) time.Time { return tl.first(&tl.scales, itoa(n)) }
func (tl *timeline) first(l *[]stamp, v string) time.Time {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for _, s := range *l {
		if s.value == v {
			return s.at
		}
	}
	return time.Time{}
}

// watchTimeline watches the revision's EndpointSlice and Deployment until
// the test ends.
func watchTimeline(t *testing.T, ns, name string) *timeline {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tl := &timeline{}
	sw, err := env.client.DiscoveryV1().EndpointSlices(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + kplat.PublicSliceName(name)})
	if err != nil {
		t.Fatal(err)
	}
	dw, err := env.client.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		last := ""
		for ev := range sw.ResultChan() {
			if m, ok := ev.Object.(metav1.Object); ok && m.GetLabels()[kplat.RouteLabel] != last {
				last = m.GetLabels()[kplat.RouteLabel]
				tl.mu.Lock()
				tl.routes = append(tl.routes, stamp{time.Now(), last})
				tl.mu.Unlock()
			}
		}
	})
	wg.Go(func() {
		last := int32(-1)
		for ev := range dw.ResultChan() {
			if d, ok := ev.Object.(*appsv1.Deployment); ok && d.Spec.Replicas != nil && *d.Spec.Replicas != last {
				last = *d.Spec.Replicas
				tl.mu.Lock()
				tl.scales = append(tl.scales, stamp{time.Now(), itoa(int(last))})
				tl.mu.Unlock()
			}
		}
	})
	t.Cleanup(func() { cancel(); sw.Stop(); dw.Stop(); wg.Wait() })
	return tl
}

// activatorLog names the first activator's log.
func activatorLog() string {
	pods, err := env.client.CoreV1().Pods(ebbNS).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + activatorName})
	if err != nil || len(pods.Items) == 0 {
		return "no-activator"
	}
	return ebbNS + "_" + pods.Items[0].Name + "_activator"
}
