//go:build node

package node

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ebb.dev/ebb/pkg/config"
)

// parkWakes is how many wakes from parked TestWakeFromParked measures.
const parkWakes = 20

// parkedApp gives the app container of d requests a parked pod lowers
// (100m/32Mi, limits 500m/64Mi) and a resizePolicy that resizes without a
// restart.
func parkedApp(t *testing.T, d *corev1.PodSpec) {
	t.Helper()
	for i, c := range d.Containers {
		if c.Name != "app" {
			continue
		}
		d.Containers[i].Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		}
		d.Containers[i].ResizePolicy = []corev1.ContainerResizePolicy{
			{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
			{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.NotRequired},
		}
		return
	}
	t.Fatal("no container app")
}

// onePod is the revision's one pod (failing when there is not exactly one
// that is not terminating).
func onePod(t *testing.T, ns, app string) *corev1.Pod {
	t.Helper()
	pods, err := env.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	if len(live) != 1 {
		t.Fatalf("%d pods of %s/%s, want 1", len(live), ns, app)
	}
	return &live[0]
}

// appCPU is the app container's CPU request in the pod's spec, and the
// one its status says is allocated ("" until the kubelet says).
func appCPU(p *corev1.Pod) (spec, allocated string) {
	return appRequest(p, corev1.ResourceCPU)
}

// appRequest is the app container's request of r in the pod's spec, and
// the one its status says is allocated ("" until the kubelet says).
func appRequest(p *corev1.Pod, r corev1.ResourceName) (spec, allocated string) {
	for _, c := range p.Spec.Containers {
		if c.Name == "app" {
			q := c.Resources.Requests[r]
			spec = q.String()
		}
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == "app" && s.Resources != nil {
			q := s.Resources.Requests[r]
			allocated = q.String()
		}
	}
	return spec, allocated
}

// TestWakeFromParked parks a copy of the example app (parking on, its
// app asking for 100m/32Mi) and wakes it parkWakes times through the
// activator's Service: each wake must answer 200 from the same pod, with
// no restart. It reports the request to first byte (p50, p95) beside the
// cold start's, the parked pod's requests as the API shows them, and the
// resize up's time (the autoscaler's write, by its log line, to the
// pod's status showing the template's CPU request again), and the app
// container's cgroup CPU setting on the node while parked (checked against
// the parked 1m: cpu.shares 2) and once woken (100m: 102).
func TestWakeFromParked(t *testing.T) {
	ns := newNamespace(t, "node-park")
	d := helloCopy(t, ns, "park", map[string]string{config.AnnotationWindow: "6s", config.AnnotationEnableParking: "true",
		config.AnnotationMaxParkedDuration: "0s"})
	appArgs(t, d, "--latency=0s")
	parkedApp(t, &d.Spec.Template.Spec)
	createDeployment(t, d)
	h := host(ns, d.Name)
	waitFor(t, 60*time.Second, "the activators know the revision", func() (bool, string) {
		code, _, err := get(context.Background(), env.activator, h, 60*time.Second)
		return err == nil && code == 200, fmt.Sprint(code, err)
	})
	first := onePod(t, ns, d.Name)
	var ttfbs, resizeUps []time.Duration
	var parkedSpec, parkedAlloc, firstMem, parkedMem, parkedMemAlloc string
	var parkedCg, wokeCg cgroupCPU
	var memLowered time.Duration
	for i := range parkWakes {
		waitFor(t, 90*time.Second, "the pod parked (its app's CPU request 1m, allocated)", func() (bool, string) {
			spec, alloc := appCPU(onePod(t, ns, d.Name))
			return spec == "1m" && alloc == "1m", "spec " + spec + ", allocated " + alloc
		})
		p := onePod(t, ns, d.Name)
		if p.UID != first.UID {
			t.Fatalf("wake %d: the pod is %s, not the parked %s: parking must keep the pod", i+1, p.Name, first.Name)
		}
		parkedSpec, parkedAlloc = appCPU(p)
		if i == 0 {
			firstMem, _ = appMemory(p)
			parkedCg = checkCgroupCPU(t, p)
			if firstMem == "32Mi" {
				// Parked before metrics-server had a sample of the pod:
				// its memory request is lowered while it stays parked,
				// once there is one.
				parkedAt := time.Now()
				waitFor(t, 120*time.Second, "the parked pod's memory request lowered once metrics-server has a sample", func() (bool, string) {
					spec, alloc := appMemory(onePod(t, ns, d.Name))
					cpu, _ := appCPU(onePod(t, ns, d.Name))
					return spec != "32Mi" && alloc == spec && cpu == "1m", "memory spec " + spec + ", allocated " + alloc + "; CPU " + cpu
				})
				memLowered = time.Since(parkedAt)
				firstMem += " then " + func() string { m, _ := appMemory(onePod(t, ns, d.Name)); return m }()
			}
		}
		parkedMem, parkedMemAlloc = appMemory(p)
		time.Sleep(500 * time.Millisecond) // the activators' view settles
		t0 := time.Now()
		code, ttfb, err := get(context.Background(), env.activator, h, 30*time.Second)
		if err != nil || code != 200 {
			t.Fatalf("wake %d: %d %v", i+1, code, err)
		}
		ttfbs = append(ttfbs, ttfb)
		var up time.Time
		waitFor(t, 30*time.Second, "the pod's status back at 100m", func() (bool, string) {
			_, alloc := appCPU(onePod(t, ns, d.Name))
			if alloc == "100m" && up.IsZero() {
				up = time.Now()
			}
			return alloc == "100m", "allocated " + alloc
		})
		if i == 0 {
			wokeCg = checkCgroupCPU(t, onePod(t, ns, d.Name))
		}
		if l, ok := firstLog(ebbLogs(t, config.AutoscalerName, t0), "woke the parked replica",
			map[string]any{"revision": ns + "/" + d.Name}); ok {
			resizeUps = append(resizeUps, up.Sub(l.at))
		}
		t.Logf("wake %2d: first byte %v", i+1, ms(ttfb))
	}
	p := onePod(t, ns, d.Name)
	restarts := int32(0)
	for _, s := range p.Status.ContainerStatuses {
		restarts += s.RestartCount
	}
	if p.UID != first.UID || restarts != 0 {
		t.Errorf("after %d park/wake cycles: pod %s (first %s), %d restarts; want the same pod, 0 restarts", parkWakes, p.Name, first.Name, restarts)
	}
	evs, _ := env.client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	var refused []string
	for _, e := range evs.Items {
		if e.Reason == "ParkRefused" {
			refused = append(refused, e.Message)
		}
	}
	if len(refused) > 0 {
		t.Errorf("parking refused: %s", strings.Join(refused, "; "))
	}
	for _, e := range evs.Items {
		if e.Reason == "Parked" {
			fmt.Printf("node: Event %s (%d times): %s\n", e.Reason, e.Count, e.Message)
		}
	}
	fmt.Printf("node: wake from parked over %d wakes (request to first byte; load average %s):\n", len(ttfbs), loadAvg())
	fmt.Printf("node:   total         p50 %6v  p95 %6v\n", ms(percentile(ttfbs, 50)), ms(percentile(ttfbs, 95)))
	fmt.Printf("node:   resize up     p50 %6v  p95 %6v  (the autoscaler's write to the pod's status at the template's request; polled)\n",
		ms(percentile(resizeUps, 50)), ms(percentile(resizeUps, 95)))
	fmt.Printf("node:   parked app CPU request: spec %s, allocated %s; memory request: spec %s, allocated %s (the first park: %s; template 100m/32Mi); "+
		"restarts after %d cycles: %d\n", parkedSpec, parkedAlloc, parkedMem, parkedMemAlloc, firstMem, parkWakes, restarts)
	fmt.Printf("node:   app cgroup parked: %s\nnode:   app cgroup woken:  %s\n", parkedCg, wokeCg)
	if memLowered > 0 {
		fmt.Printf("node:   the first park kept the memory request (no sample from metrics-server yet); lowered while parked %v later\n",
			memLowered.Round(time.Second))
	}
}
