//go:build node

package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ebb.dev/ebb/pkg/config"
)

// The parked tier on the real node, beyond TestWakeFromParked's wakes:
// hey from parked, a node that will not resize in place (a refusal), and
// the scale-down's choice of the pod to remove.

// parkedCopy is a copy of hello that parks (window 6 s, no limit on how
// long it stays parked), its app answering at once and asking for
// parkedApp's requests, created and woken once through the activator.
func parkedCopy(t *testing.T, ns, name string) string {
	t.Helper()
	d := helloCopy(t, ns, name, map[string]string{config.AnnotationWindow: "6s", config.AnnotationEnableParking: "true",
		config.AnnotationMaxParkedDuration: "0s"})
	appArgs(t, d, "--latency=0s")
	parkedApp(t, &d.Spec.Template.Spec)
	createDeployment(t, d)
	h := host(ns, d.Name)
	waitFor(t, 60*time.Second, "the activators know the revision", func() (bool, string) {
		code, _, err := get(context.Background(), env.activator, h, 60*time.Second)
		return err == nil && code == 200, fmt.Sprint(code, err)
	})
	return d.Name
}

// waitParked waits until the revision's one pod runs with its app's CPU
// request at the parked 1m, in its spec and as the kubelet allocated it.
func waitParked(t *testing.T, ns, name string, timeout time.Duration) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	waitFor(t, timeout, "the pod parked (its app's CPU request 1m, allocated)", func() (bool, string) {
		s, err := stateOf(context.Background(), ns, name)
		if err != nil || s.pods != 1 {
			return false, fmt.Sprint(s, err)
		}
		p = onePod(t, ns, name)
		spec, alloc := appCPU(p)
		return spec == "1m" && alloc == "1m", "spec " + spec + ", allocated " + alloc
	})
	return p
}

// restarts is the sum of the pod's containers' restart counts.
func restarts(p *corev1.Pod) int32 {
	n := int32(0)
	for _, s := range p.Status.ContainerStatuses {
		n += s.RestartCount
	}
	return n
}

// heyPercentile is a percentile of hey's latency distribution ("50%",
// "99%"), 0 when hey did not print it.
func heyPercentile(out, p string) time.Duration {
	// hey prints "50%% in 0.0123 secs" (its template doubles the %).
	m := regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(strings.TrimSuffix(p, "%")) + `%%? in ([0-9.]+) secs`).FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	f, _ := strconv.ParseFloat(m[1], 64)
	return time.Duration(f * float64(time.Second))
}

// TestHeyFromParked: hey with 50 clients for 30 s through the activator's
// Service on a parked revision: every request gets a 200 (the parked pod
// serves at once, the revision scales out), and the revision parks again
// after the load.
func TestHeyFromParked(t *testing.T) {
	ns := newNamespace(t, "node-park-hey")
	name := parkedCopy(t, ns, "parkhey")
	parked := waitParked(t, ns, name, 90*time.Second)
	time.Sleep(500 * time.Millisecond) // the activators' view settles
	stop := maxReady(ns, name)
	invalid := kubeProxyInvalidDrops()
	start := time.Now()
	r := runHey(t, env.activator, host(ns, name), 50, 30*time.Second)
	most := stop()
	fmt.Printf("node: hey 50 clients 30 s from parked: %s; latency p50 %v p99 %v; up to %d ready pods (load average %s)\n",
		r, ms(heyPercentile(r.out, "50%")), ms(heyPercentile(r.out, "99%")), most, loadAvg())
	if !r.only200() {
		t.Errorf("hey saw other than 200s: %s", r)
	}
	reportStuck(t, start, invalid)
	if l, ok := firstLog(ebbLogs(t, config.AutoscalerName, start), "woke the parked replica", map[string]any{"revision": ns + "/" + name}); ok {
		fmt.Printf("node: the autoscaler woke the parked pod %v after the load began (the log's took: %v)\n",
			ms(l.at.Sub(start)), l.fields["took"])
	}
	fmt.Printf("node: kube-proxy's conntrack INVALID drops before and after the load: %v, %v (-1: unread)\n", invalid, kubeProxyInvalidDrops())
	if most < 2 {
		t.Errorf("at most %d ready pods under 50 clients, want several: the parked revision did not scale out", most)
	}
	// The parked pod served all along: it is never restarted by its wake.
	pods, err := env.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; p.UID == parked.UID && restarts(p) != 0 {
			t.Errorf("the parked pod %s restarted %d times under the load", p.Name, restarts(p))
		}
	}
	again := time.Now()
	p := waitParked(t, ns, name, 120*time.Second)
	fmt.Printf("node: parked again %v after the load ended (pod %s, the parked one before: %v)\n",
		time.Since(again).Round(time.Second), p.Name, p.UID == parked.UID)
}

// raStatus is a RevisionAutoscaler's status as kubectl reads it.
type raStatus struct {
	State   string `json:"state"`
	Desired int32  `json:"desiredReplicas"`
	Parking *struct {
		State, Reason, Message string
	} `json:"parking"`
}

// revisionAutoscaler reads ns/name's RevisionAutoscaler with kubectl.
func revisionAutoscaler(ns, name string) (raStatus, error) {
	var ra struct {
		Status raStatus `json:"status"`
	}
	out, err := exec.Command("kubectl", "get", "ra", "-n", ns, name, "-o", "json").CombinedOutput()
	if err != nil {
		return ra.Status, fmt.Errorf("kubectl get ra: %v: %s", err, out)
	}
	return ra.Status, json.Unmarshal(out, &ra)
}

// parkRefusedEvents are the ParkRefused Events in ns.
func parkRefusedEvents(t *testing.T, ns string) []corev1.Event {
	t.Helper()
	evs, err := env.client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range evs.Items {
		if e.Reason == "ParkRefused" {
			out = append(out, e)
		}
	}
	return out
}

// TestParkRefused: a revision with parking on whose app container's
// resizePolicy restarts it to resize CPU (a resize in place would not
// keep it warm, so it cannot be parked): the revision goes to zero
// instead, with one ParkRefused Warning Event and its RevisionAutoscaler
// saying so, and it is never left stuck: a request wakes it from zero,
// and it goes to zero again, with no second Event.
func TestParkRefused(t *testing.T) {
	ns := newNamespace(t, "node-park-refused")
	d := helloCopy(t, ns, "refused", map[string]string{config.AnnotationWindow: "6s", config.AnnotationEnableParking: "true",
		config.AnnotationMaxParkedDuration: "0s"})
	appArgs(t, d, "--latency=0s")
	parkedApp(t, &d.Spec.Template.Spec)
	for i, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "app" {
			d.Spec.Template.Spec.Containers[i].ResizePolicy[0] = corev1.ContainerResizePolicy{
				ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer}
		}
	}
	createDeployment(t, d)
	h := host(ns, d.Name)
	start := time.Now()
	waitFor(t, 60*time.Second, "the activators know the revision", func() (bool, string) {
		code, _, err := get(context.Background(), env.activator, h, 60*time.Second)
		return err == nil && code == 200, fmt.Sprint(code, err)
	})
	// Never parked: its app's CPU request stays 100m until it is at zero.
	waitFor(t, 90*time.Second, "at zero instead of parked", func() (bool, string) {
		s, err := stateOf(context.Background(), ns, d.Name)
		if err != nil {
			return false, err.Error()
		}
		if s.spec == 0 {
			return true, ""
		}
		if s.pods == 1 {
			if spec, _ := appCPU(onePod(t, ns, d.Name)); spec != "100m" {
				t.Fatalf("the app's CPU request is %s: the pod was resized although its resizePolicy restarts it", spec)
			}
		}
		return false, s.String()
	})
	toZero := time.Since(start)
	evs := parkRefusedEvents(t, ns)
	if len(evs) != 1 || evs[0].Type != corev1.EventTypeWarning || evs[0].InvolvedObject.Kind != "Deployment" {
		t.Errorf("ParkRefused Events: %+v; want one Warning on the Deployment", evs)
	} else {
		fmt.Printf("node: park refused: Event %s %s on %s/%s: %s\n", evs[0].Type, evs[0].Reason, evs[0].InvolvedObject.Kind,
			evs[0].InvolvedObject.Name, evs[0].Message)
	}
	var ra raStatus
	waitFor(t, 30*time.Second, "the RevisionAutoscaler says parking is refused", func() (bool, string) {
		var err error
		ra, err = revisionAutoscaler(ns, d.Name)
		if err != nil {
			return false, err.Error()
		}
		return ra.Parking != nil && ra.Parking.State == "refused", fmt.Sprintf("%+v", ra)
	})
	wide, _ := exec.Command("kubectl", "get", "ra", "-n", ns, "-o", "wide").CombinedOutput()
	fmt.Printf("node: park refused: at zero %v after the first request; status state %q, parking %s (%s)\nnode: kubectl get ra -o wide:\n%s",
		toZero.Round(time.Second), ra.State, ra.Parking.State, ra.Parking.Reason, indent(string(wide)))
	// Not stuck: woken from zero, and to zero again; the Event is not repeated.
	waitZero(t, ns, d.Name, 60*time.Second)
	t0 := time.Now()
	code, ttfb, err := get(context.Background(), env.activator, h, 30*time.Second)
	if err != nil || code != 200 {
		t.Fatalf("a request after the refusal: %d %v; want a 200 (woken from zero)", code, err)
	}
	waitState(t, ns, d.Name, 90*time.Second, "written to zero again", func(s state) bool { return s.spec == 0 })
	if n := len(parkRefusedEvents(t, ns)); n != 1 {
		t.Errorf("%d ParkRefused Events after the second trip to zero, want 1 (said once)", n)
	}
	fmt.Printf("node: park refused: woken from zero in %v (first byte), back at zero %v later; still one ParkRefused Event\n",
		ms(ttfb), time.Since(t0).Round(time.Second))
}

// indent prefixes each line of s for the test's output.
func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("node:   " + l + "\n")
	}
	return b.String()
}

// TestScaleDownKeepsBusyPod: a revision at 5 pods (50 clients; min-scale
// 4) goes to 4 while one pod serves a long request (60 s, straight to its
// queue-proxy): Ebb sets controller.kubernetes.io/pod-deletion-cost from
// the queue-proxies' in-flight counts before it writes the scale, so the
// ReplicaSet controller keeps the busy pod although it is the one it
// would remove otherwise (the most recently ready), and the long request
// completes with a 200. A scale-down delay of 10 s holds the scale-down
// until the 50 clients' requests are out of the queue-proxies' reports:
// the busy pod is then the only one with a request in flight.
func TestScaleDownKeepsBusyPod(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "node-busy")
	d := helloCopy(t, ns, "busy", map[string]string{
		config.AnnotationWindow: "6s", "autoscaling.knative.dev/min-scale": "4", "autoscaling.knative.dev/max-scale": "5",
		"autoscaling.knative.dev/target": "10", "autoscaling.knative.dev/target-burst-capacity": "-1",
		config.AnnotationScaleDownDelay: "10s",
	})
	appArgs(t, d, "--latency=10ms")
	createDeployment(t, d)
	h := host(ns, d.Name)
	waitReady(t, ns, d.Name, 4, 120*time.Second)
	heyWait, heyStop := startHey(t, env.activator, h, 50, 150*time.Second)
	waitState(t, ns, d.Name, 120*time.Second, "5 ready pods under 50 clients", func(s state) bool { return s.ready == 5 && s.pods == 5 })
	busy := newestReady(t, ns, d.Name)
	const long = 60 * time.Second
	addr := net.JoinHostPort(busy.Status.PodIP, strconv.Itoa(int(servingPort(t, busy))))
	type answer struct {
		code int
		took time.Duration
		err  error
	}
	done := make(chan answer, 1)
	sent := time.Now()
	go func() {
		code, err := longGet(addr, h, long)
		done <- answer{code, time.Since(sent), err}
	}()
	time.Sleep(2 * time.Second) // in flight, and in the queue-proxy's next report
	heyStop()
	r := heyWait()
	quiet := time.Now()
	fmt.Printf("node: scale-down 5 -> 4 with a busy pod: 50 clients brought it to 5: %s\n", r)
	// The costs as they were when the scale was written (set before it).
	var costs map[string]string
	waitFor(t, long-time.Since(sent)-10*time.Second, "the scale written to 4 while the long request runs", func() (bool, string) {
		dep, err := env.client.AppsV1().Deployments(ns).Get(ctx, d.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pods, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + d.Name})
		if err != nil {
			return false, err.Error()
		}
		costs = map[string]string{}
		for _, p := range pods.Items {
			costs[p.Name] = p.Annotations[corev1.PodDeletionCost]
		}
		return *dep.Spec.Replicas == 4, fmt.Sprintf("spec.replicas %d", *dep.Spec.Replicas)
	})
	written := time.Since(quiet)
	waitState(t, ns, d.Name, long-time.Since(sent)-3*time.Second, "4 pods left while the long request runs",
		func(s state) bool { return s.spec == 4 && s.pods == 4 && s.ready == 4 })
	down := time.Since(sent)
	pods, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + d.Name})
	if err != nil {
		t.Fatal(err)
	}
	kept := false
	for _, p := range pods.Items {
		if p.UID == busy.UID && p.DeletionTimestamp == nil {
			kept = true
		}
	}
	busyCost, _ := strconv.Atoi(costs[busy.Name])
	var shown []string
	for name, c := range costs {
		mark := ""
		if name == busy.Name {
			mark = " (busy)"
		}
		if c == "" {
			c = "unset"
		}
		if n, _ := strconv.Atoi(c); name != busy.Name && n >= busyCost {
			t.Errorf("pod %s's deletion cost %s is not below the busy pod's %d when the scale was written", name, c, busyCost)
		}
		shown = append(shown, name+"="+c+mark)
	}
	sort.Strings(shown)
	if !kept {
		t.Errorf("the busy pod %s was removed by the scale-down", busy.Name)
	}
	a := <-done
	fmt.Printf("node: scale-down 5 -> 4 with a busy pod: written %v after the load ended, 4 pods %v after the long request began; "+
		"busy pod %s (the most recently ready) kept: %v; deletion costs when written: %s; the long request: %d after %v (%v)\n",
		written.Round(100*time.Millisecond), down.Round(time.Second), busy.Name, kept, strings.Join(shown, ", "), a.code,
		a.took.Round(100*time.Millisecond), a.err)
	if a.err != nil || a.code != 200 || a.took < long {
		t.Errorf("the long request: %d after %v, %v; want a 200 after at least %v", a.code, a.took, a.err, long)
	}
}

// newestReady is the ready pod of the revision that became ready last
// (the ReplicaSet controller's pick for a scale-down when the pods'
// deletion costs are equal).
func newestReady(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	pods, err := env.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		t.Fatal(err)
	}
	var best *corev1.Pod
	var bestAt time.Time
	for i := range pods.Items {
		p := &pods.Items[i]
		if !podReady(p) || p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && (best == nil || !c.LastTransitionTime.Time.Before(bestAt)) {
				best, bestAt = p, c.LastTransitionTime.Time
			}
		}
	}
	if best == nil {
		t.Fatalf("no ready pod of %s/%s", ns, name)
	}
	return best
}

// servingPort is the queue-proxy's serving port on the pod.
func servingPort(t *testing.T, p *corev1.Pod) int32 {
	t.Helper()
	for _, c := range p.Spec.Containers {
		if c.Name == config.QueueProxyContainer {
			for _, port := range c.Ports {
				if port.Name == "http" {
					return port.ContainerPort
				}
			}
		}
	}
	t.Fatalf("pod %s has no queue-proxy port named http", p.Name)
	return 0
}

// longGet sends GET /?latency=long to addr (a pod's queue-proxy) and reads
// the whole answer.
func longGet(addr, host string, long time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), long+30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/?latency="+long.String(), nil)
	if err != nil {
		return 0, err
	}
	req.Host = host
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return resp.StatusCode, err
	}
	return resp.StatusCode, nil
}

// cgroupCPU is a container's CPU setting as its cgroup on the node holds
// it: cgroup v1's cpu.shares and cpu.cfs_quota_us, or v2's cpu.weight and
// cpu.max, and the same of its pod's cgroup.
type cgroupCPU struct {
	v2                           bool
	container, pod               string // cpu.shares (v1) or cpu.weight (v2)
	containerQuota, podQuotaText string // cpu.cfs_quota_us (v1) or cpu.max (v2)
}

func (c cgroupCPU) String() string {
	if c.v2 {
		return fmt.Sprintf("container cpu.weight %s cpu.max %q; pod cpu.weight %s cpu.max %q", c.container, c.containerQuota, c.pod, c.podQuotaText)
	}
	return fmt.Sprintf("container cpu.shares %s cpu.cfs_quota_us %s; pod cpu.shares %s cpu.cfs_quota_us %s",
		c.container, c.containerQuota, c.pod, c.podQuotaText)
}

// cgroupScript prints the CPU settings of the cgroup of pod UID $1 and of
// its container ID $2 ("pod|container FILE VALUE" lines). It runs in a
// mount namespace of its own (unshare -m): the tests run under ip netns
// exec, whose sysfs hides the node's cgroup hierarchies, so it mounts the
// cpu hierarchy (cgroup v1; the unified one on v2) where only it sees it.
const cgroupScript = `set -e
mount -t tmpfs ebb-test /mnt
mkdir /mnt/c
mount -t cgroup -o cpu cgroup /mnt/c 2>/dev/null || mount -t cgroup -o cpu,cpuacct cgroup /mnt/c 2>/dev/null || mount -t cgroup2 cgroup2 /mnt/c
d=$(find /mnt/c -maxdepth 6 -type d -name "pod$1" | head -n 1)
[ -n "$d" ] || { echo "no cgroup pod$1 on the node" >&2; exit 1; }
for f in cpu.shares cpu.cfs_quota_us cpu.weight cpu.max; do
	if [ -f "$d/$f" ]; then echo "pod $f $(cat "$d/$f")"; fi
	if [ -f "$d/$2/$f" ]; then echo "container $f $(cat "$d/$2/$f")"; fi
done
`

// readCgroupCPU reads the CPU setting of the cgroup of the pod's
// container name on the node (the kubelet's cgroupfs layout:
// .../pod<UID>/<container ID>).
func readCgroupCPU(p *corev1.Pod, name string) (cgroupCPU, error) {
	var id string
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == name {
			_, id, _ = strings.Cut(s.ContainerID, "://")
		}
	}
	if id == "" {
		return cgroupCPU{}, fmt.Errorf("pod %s: no container ID for %s", p.Name, name)
	}
	out, err := exec.Command("unshare", "-m", "sh", "-c", cgroupScript, "sh", string(p.UID), id).CombinedOutput()
	if err != nil {
		return cgroupCPU{}, fmt.Errorf("reading the cgroup of pod %s: %v: %s", p.Name, err, out)
	}
	var c cgroupCPU
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, " ", 3)
		if len(f) != 3 {
			continue
		}
		switch f[0] + " " + f[1] {
		case "pod cpu.shares", "pod cpu.weight":
			c.pod, c.v2 = f[2], f[1] == "cpu.weight"
		case "pod cpu.cfs_quota_us", "pod cpu.max":
			c.podQuotaText = f[2]
		case "container cpu.shares", "container cpu.weight":
			c.container = f[2]
		case "container cpu.cfs_quota_us", "container cpu.max":
			c.containerQuota = f[2]
		}
	}
	if c.container == "" {
		return c, fmt.Errorf("pod %s: no CPU setting in its container %s's cgroup: %s", p.Name, name, out)
	}
	return c, nil
}

// cpuShares is the cgroup v1 cpu.shares the kubelet gives a CPU request
// (its MilliCPUToShares: 1024 a core, at least 2).
func cpuShares(q resource.Quantity) int64 {
	return max(q.MilliValue()*1024/1000, 2)
}

// cpuWeight is the cgroup v2 cpu.weight of those shares (the runtimes'
// conversion).
func cpuWeight(shares int64) int64 { return 1 + (shares-2)*9999/262142 }

// checkCgroupCPU checks that the app container's cgroup holds the CPU
// request its pod's spec says (parked: the floor), and returns what it
// read.
func checkCgroupCPU(t *testing.T, p *corev1.Pod) cgroupCPU {
	t.Helper()
	var req resource.Quantity
	for _, c := range p.Spec.Containers {
		if c.Name == "app" {
			req = c.Resources.Requests[corev1.ResourceCPU]
		}
	}
	// The status shows what the runtime reports; the cgroup may take a
	// moment more: a few seconds' grace.
	deadline := time.Now().Add(5 * time.Second)
	for {
		cg, err := readCgroupCPU(p, "app")
		if err != nil {
			t.Errorf("reading the app container's cgroup: %v", err)
			return cg
		}
		want := cpuShares(req)
		if cg.v2 {
			want = cpuWeight(want)
		}
		if cg.container == strconv.FormatInt(want, 10) {
			return cg
		}
		if time.Now().After(deadline) {
			t.Errorf("pod %s: the app container's cgroup holds %s; its CPU request %s makes %d", p.Name, cg, req.String(), want)
			return cg
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// appMemory is the app container's memory request in the pod's spec, and
// the one its status says is allocated ("" until the kubelet says).
func appMemory(p *corev1.Pod) (spec, allocated string) {
	return appRequest(p, corev1.ResourceMemory)
}
