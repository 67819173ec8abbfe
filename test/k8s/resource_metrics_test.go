//go:build k8s

package k8s

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ebb.dev/ebb/pkg/manifest"
	"ebb.dev/ebb/pkg/manifest/convert"
	"ebb.dev/ebb/pkg/platform/kubernetes/reconciler"
	"ebb.dev/ebb/pkg/platform/kubernetes/resourcemetrics"
	"ebb.dev/ebb/pkg/platform/local/resusage"
)

// nodeIP is every kwok node's InternalIP (hack/testbed.sh NODE_IP), where
// metrics-server scrapes the nodes' kubelets.
const nodeIP = "10.244.255.1"

// serveResourceMetrics serves the kubelet's resource metrics endpoint
// (https://NODE_IP:10250/metrics/resource, in Prometheus' text format) for
// the testbed's metrics-server: the CPU seconds and working set of each
// container's process (its whole process tree, by resusage, as the local
// platform reads a replica), so PodMetrics carry the pods' real usage.
// Every node has the same InternalIP: metrics-server scrapes this once
// per node and merges the same pods. It returns the server's stop.
func (k *kubelet) serveResourceMetrics() (func(), error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(nodeIP, "10250"))
	if err != nil {
		return nil, fmt.Errorf("the test kubelet's /metrics/resource: %w", err)
	}
	reader := resusage.NewReader(os.DirFS("/"))
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics/resource" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Write([]byte(k.resourceMetrics(reader, time.Now())))
	}))
	srv.Listener = ln
	srv.StartTLS() // metrics-server runs with --kubelet-insecure-tls
	return srv.Close, nil
}

// resourceMetrics is the /metrics/resource page of the pods running now.
func (k *kubelet) resourceMetrics(reader *resusage.Reader, now time.Time) string {
	ts := now.UnixMilli()
	var cpu, mem strings.Builder
	var nodeCPU time.Duration
	var nodeMem int64
	k.mu.Lock()
	runs := make([]*podRun, 0, len(k.pods))
	for _, r := range k.pods {
		runs = append(runs, r)
	}
	k.mu.Unlock()
	for _, r := range runs {
		for i, c := range r.pod.Spec.Containers {
			if i >= len(r.procs) {
				break
			}
			pid := r.procs[i].pid()
			if pid == 0 {
				continue
			}
			u, err := reader.Read(pid)
			if err != nil {
				continue // exited since: a scrape without it, as a kubelet between restarts
			}
			// A kubelet reads the cgroup's CPU time in nanoseconds: a
			// container that started has used some. /proc counts clock
			// ticks (10ms), so an idle process that started in less reads
			// 0, and metrics-server drops a container whose CPU is 0 as
			// incomplete: the pod would have no metrics at all, which the
			// HPA's rules count as 100% of its request on a scale-down
			// (seen on an idle machine: the replicas added under load,
			// which took none of it, kept the revision from scaling back).
			// So the floor is a microsecond: a rate of 0, not a missing pod.
			used := max(u.CPU, time.Microsecond)
			labels := fmt.Sprintf(`{container=%q,namespace=%q,pod=%q}`, c.Name, r.pod.Namespace, r.pod.Name)
			fmt.Fprintf(&cpu, "container_cpu_usage_seconds_total%s %g %d\n", labels, used.Seconds(), ts)
			fmt.Fprintf(&mem, "container_memory_working_set_bytes%s %d %d\n", labels, u.WorkingSet, ts)
			nodeCPU += used
			nodeMem += u.WorkingSet
		}
	}
	return fmt.Sprintf("# TYPE container_cpu_usage_seconds_total counter\n%s"+
		"# TYPE container_memory_working_set_bytes gauge\n%s"+
		"# TYPE node_cpu_usage_seconds_total counter\nnode_cpu_usage_seconds_total %g %d\n"+
		"# TYPE node_memory_working_set_bytes gauge\nnode_memory_working_set_bytes %d %d\n",
		cpu.String(), mem.String(), max(nodeCPU, time.Millisecond).Seconds(), ts, max(nodeMem, 1<<20), ts)
}

// TestResourceMetricsThroughAggregation: the real metrics-server, behind
// the API server's aggregation layer, lists a pod of the example app
// with the real usage of its two processes, and Ebb's reader
// (resourcemetrics.NewClient, as the autoscaler builds it) reads it.
func TestResourceMetricsThroughAggregation(t *testing.T) {
	ns := newNamespace(t, "resource-metrics")
	d := appDeployment(t, ns, "hello", map[string]string{"autoscaling.knative.dev/min-scale": "1"})
	d.Spec.Replicas = ptr(int32(1))
	createApp(t, d)
	src, err := resourcemetrics.NewClient(env.rest)
	if err != nil {
		t.Fatal(err)
	}
	// metrics-server lists a pod after two scrapes (a CPU rate needs two
	// points), 10s apart (--metric-resolution).
	var usage resourcemetrics.PodUsage
	waitFor(t, 120*time.Second, "the pod's PodMetrics with cpu and memory of both containers", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		pods, err := src.ListPodMetrics(ctx, ns)
		if err != nil {
			return false, err.Error()
		}
		for name, u := range pods {
			if !strings.HasPrefix(name, "hello-") {
				continue
			}
			usage = u
			_, cpuOK := u.Resource("cpu", "")
			_, memOK := u.Resource("memory", "")
			return cpuOK && memOK && len(u.Containers) == 2, fmt.Sprintf("%s: %+v", name, u)
		}
		return false, fmt.Sprintf("%d pods listed, none of hello", len(pods))
	})
	t.Logf("PodMetrics through the aggregation layer: %+v", usage)
	for _, c := range usage.Containers {
		// Go processes: megabytes of working set, and a sane rate.
		if c.MemMilli < 1_000*(1<<20) || c.MemMilli > 1_000*(1<<30) {
			t.Errorf("container %s: working set %d bytes, not that of a live Go process", c.Name, c.MemMilli/1000)
		}
		if c.CPUMilli < 0 || c.CPUMilli > 4_000 {
			t.Errorf("container %s: %dm of CPU on a 2-core machine", c.Name, c.CPUMilli)
		}
	}
	if usage.Window <= 0 || time.Since(usage.Timestamp) > time.Minute {
		t.Errorf("window %v, timestamp %v: not a recent rate", usage.Window, usage.Timestamp)
	}
	if pods, err := src.ListPodMetrics(context.Background(), "no-such-namespace"); err != nil || len(pods) != 0 {
		t.Errorf("a namespace without pods: %v, %v; want an empty list", pods, err)
	}
}

// TestHPACPUWithoutSidecar is the HPA walkthrough on the testbed: a
// Deployment without a queue-proxy on Ebb's HPA class, cpu at 50% of a
// 100m request, read from the real metrics-server (which the test kubelet
// feeds with the app's real CPU). Under load (each request spends 20ms of
// CPU) it scales up; after the load, it comes back to one once the
// scale-down stabilization window (20s here) has passed.
func TestHPACPUWithoutSidecar(t *testing.T) {
	ns := newNamespace(t, "hpa-cpu")
	d := cpuWorkDeployment(t, ns, "cpuwork")
	createApp(t, d)
	waitFor(t, 60*time.Second, "one ready pod", func() (bool, string) {
		n := readyPods(context.Background(), ns, "cpuwork")
		return n == 1, fmt.Sprintf("%d ready", n)
	})
	stop := cpuLoad(t, ns, "cpuwork")
	start := time.Now()
	waitFor(t, 180*time.Second, "2 or more replicas under load", func() (bool, string) {
		r, err := replicas(context.Background(), ns, "cpuwork")
		st, _, _ := status(context.Background(), ns, "cpuwork")
		return err == nil && r >= 2, fmt.Sprintf("%d replicas (%v); status %+v", r, err, st)
	})
	st, _, _ := status(context.Background(), ns, "cpuwork")
	t.Logf("scaled up %v after the load started; status %+v", time.Since(start).Round(time.Second), st)
	stop()
	start = time.Now()
	waitFor(t, 180*time.Second, "back to 1 replica after the load and the window", func() (bool, string) {
		r, err := replicas(context.Background(), ns, "cpuwork")
		st, _, _ := status(context.Background(), ns, "cpuwork")
		return err == nil && r == 1, fmt.Sprintf("%d replicas (%v); status %+v", r, err, st)
	})
	t.Logf("back to 1 replica %v after the load stopped", time.Since(start).Round(time.Second))
}

// TestHPAMemoryWithoutSidecar: a memory-target revision (an average of
// 40Mi a pod) of an app that holds 64 MiB scales on the working set the
// metrics-server reports: one pod over the target gives two.
func TestHPAMemoryWithoutSidecar(t *testing.T) {
	ns := newNamespace(t, "hpa-memory")
	d := cpuWorkDeployment(t, ns, "memwork")
	ann := d.Spec.Template.Annotations
	delete(ann, "autoscaling.knative.dev/metric")
	delete(ann, "autoscaling.knative.dev/target")
	ann["autoscaling.ebb.dev/metrics"] = `[{"metric": "memory", "averageValue": "40Mi"}]`
	ann["autoscaling.knative.dev/max-scale"] = "2"
	d.Spec.Template.Spec.Containers[0].Args = []string{"--hold-mib=64"}
	createApp(t, d)
	start := time.Now()
	waitFor(t, 180*time.Second, "2 replicas on the memory of one", func() (bool, string) {
		r, err := replicas(context.Background(), ns, "memwork")
		st, _, _ := status(context.Background(), ns, "memwork")
		return err == nil && r == 2, fmt.Sprintf("%d replicas (%v); status %+v", r, err, st)
	})
	st, _, _ := status(context.Background(), ns, "memwork")
	t.Logf("scaled to 2 after %v; status %+v", time.Since(start).Round(time.Second), st)
}

// cpuWorkDeployment is what `autoscaler convert` makes of the HPA
// walkthrough's manifests for the testbed: a php-apache style Deployment of
// the cpuwork app (20ms of CPU a request, a request of 100m) and the
// autoscaling/v2 HorizontalPodAutoscaler `kubectl autoscale --cpu-percent=50
// --min=1 --max=3` makes, with a scale-down stabilization of 20s. The
// result is the HPA class on cpu, opted in, sidecarless.
func cpuWorkDeployment(t *testing.T, ns, name string) *appsv1.Deployment {
	t.Helper()
	src := fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
        - name: app
          image: %[3]s:dev
          args: ["--cpu=20ms"]
          ports: [{name: http, containerPort: 8080}]
          resources: {requests: {cpu: 100m}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: %[1]s}
  minReplicas: 1
  maxReplicas: 3
  metrics:
    - type: Resource
      resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
  behavior:
    scaleDown: {stabilizationWindowSeconds: 20}
`, name, ns, imageCPUWork)
	set, err := manifest.Decode("php-apache.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	res, err := convert.Convert(set, convert.Options{})
	if err != nil {
		t.Fatalf("autoscaler convert of the HPA walkthrough: %v", err)
	}
	for _, o := range res.Objects {
		if d, ok := o.Value.(*appsv1.Deployment); ok {
			if !reconciler.Sidecarless(d) {
				t.Fatalf("convert made %s/%s with the sidecar; want the HPA class without one", d.Namespace, d.Name)
			}
			return d
		}
	}
	t.Fatalf("convert made no Deployment of the HPA walkthrough: %+v", res.Objects)
	return nil
}

// cpuLoad sends about 10 requests a second, 0.2 cores of work, spread
// over the app's ready pods (there is no kube-proxy: the test dials pod
// IPs), until the returned stop, which waits for it.
func cpuLoad(t *testing.T, ns, app string) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	client := &http.Client{Timeout: 5 * time.Second}
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		var ips []string
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if i%10 == 0 {
				ips = podIPs(ctx, ns, app)
			}
			if len(ips) == 0 {
				continue
			}
			go func(ip string) {
				resp, err := client.Get("http://" + net.JoinHostPort(ip, "8080") + "/")
				if err == nil {
					resp.Body.Close()
				}
			}(ips[i%len(ips)])
		}
	}()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// podIPs are the addresses of app's ready pods.
func podIPs(ctx context.Context, ns, app string) []string {
	pods, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return nil
	}
	var ips []string
	for _, p := range pods.Items {
		if p.Status.PodIP != "" && p.DeletionTimestamp == nil {
			ips = append(ips, p.Status.PodIP)
		}
	}
	return ips
}
