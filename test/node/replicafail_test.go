//go:build node

package node

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/podfailure"
)

// TestAppOOMUnderLoad: on the real node, a copy of the example app (one
// replica, min-scale 1) that keeps 1 MiB per request it answers (hello
// --keep-per-request) under a 64 MiB memory limit, under hey 30 clients
// for 40 s through the activator's Service: the kernel kills it every
// ~50 requests, the kubelet restarts it (then backs off). The 502s are at
// most (app deaths + 1) x the clients in flight (before: 335,493 of them
// in 60 s); every other answer is a 200 or a 503 that names the OOM kill,
// the limit and the fix, and so does the Deployment's Warning Event.
func TestAppOOMUnderLoad(t *testing.T) {
	ctx := context.Background()
	const clients = 30
	ns := newNamespace(t, "node-oom")
	d := helloCopy(t, ns, "oom", map[string]string{config.AnnotationMinScale: "1"})
	appArgs(t, d, "--latency", "5ms", "--keep-per-request", strconv.Itoa(1<<20))
	for i, c := range d.Spec.Template.Spec.Containers {
		if c.Name != "app" {
			continue
		}
		r := &d.Spec.Template.Spec.Containers[i].Resources
		if r.Limits == nil {
			r.Limits = corev1.ResourceList{}
		}
		r.Limits[corev1.ResourceMemory] = resource.MustParse("64Mi")
		if q, ok := r.Requests[corev1.ResourceMemory]; ok && q.Cmp(resource.MustParse("64Mi")) > 0 {
			r.Requests[corev1.ResourceMemory] = resource.MustParse("32Mi")
		}
	}
	createDeployment(t, d)
	waitReady(t, ns, d.Name, 1, 120*time.Second)
	r := runHey(t, env.activator, host(ns, d.Name), clients, 40*time.Second, "-t", "60")
	deaths := appRestarts(ctx, t, ns, d)
	fmt.Printf("node: app keeping 1 MiB per request under a 64 MiB limit, hey %d clients 40 s through the activator: %s; "+
		"the app was killed %d times (load average %s)\n", clients, r, deaths, loadAvg())
	checkFailingLoad(t, r, deaths, clients)
	a := getBody(env.activator, host(ns, d.Name), 60*time.Second)
	fmt.Printf("node: after the load, a request got %s\n", a)
	if a.code == http.StatusServiceUnavailable {
		for _, part := range []string{"revision " + ns + "/" + d.Name + ": its pods keep failing", "OOMKilled", "limit of 64Mi",
			"raise the container's memory limit"} {
			if !strings.Contains(a.body, part) {
				t.Errorf("the 503 after the load lacks %q: %s", part, a)
			}
		}
	}
	checkCrashEvents(ctx, t, ns, d.Name, podfailure.ReasonContainerOOMKilled)
	if msg, ok := warningEvent(ctx, ns, d.Name, podfailure.ReasonContainerOOMKilled, "limit of 64Mi"); !ok {
		t.Errorf("no Warning Event %s naming the limit of 64Mi: %s", podfailure.ReasonContainerOOMKilled, msg)
	}
}

// checkFailingLoad checks hey's answers for a revision whose app died
// deaths times: at most (deaths + 1) x clients 502s (the requests at the
// app when it died), only 200, 503 and those 502s otherwise, and at most
// one request per client without an answer within hey's 60 s (one held
// while the revision flips between a replica back up and its next death).
func checkFailingLoad(t *testing.T, r heyResult, deaths, clients int) {
	t.Helper()
	if deaths == 0 {
		t.Fatalf("the app never died: %s", r)
	}
	if n, most := r.codes[http.StatusBadGateway], (deaths+1)*clients; n > most {
		t.Errorf("%d x 502, want at most %d ((%d deaths + 1) x %d clients): %s", n, most, deaths, clients, r)
	}
	for code, n := range r.codes {
		if code != http.StatusOK && code != http.StatusBadGateway && code != http.StatusServiceUnavailable {
			t.Errorf("%d x %d, want only 200, 503 and the bounded 502s: %s", n, code, r)
		}
	}
	errs := 0
	for _, n := range r.errors {
		errs += n
	}
	if errs > clients {
		t.Errorf("%d requests without an answer, want at most %d: %s", errs, clients, r)
	}
}

// TestOneOfThreeCrashes: on the real node, a copy of the example app at 3
// replicas (min and max scale 3) under hey 30 clients for 40 s through the
// activator's Service; 10 s in, one replica's app is killed (SIGKILL
// through the testbed's containerd: a crash) and the kubelet restarts it.
// The requests at the dying app fail (at most one per client); every
// other request is answered 200: the activator sends what the dead app
// never got to the two others.
func TestOneOfThreeCrashes(t *testing.T) {
	ctx := context.Background()
	const clients = 30
	ns := newNamespace(t, "node-onecrash")
	d := helloCopy(t, ns, "three", map[string]string{config.AnnotationMinScale: "3", "autoscaling.knative.dev/max-scale": "3"})
	appArgs(t, d, "--latency", "5ms")
	createDeployment(t, d)
	waitReady(t, ns, d.Name, 3, 120*time.Second)
	wait, _ := startHey(t, env.activator, host(ns, d.Name), clients, 40*time.Second, "-t", "60")
	time.Sleep(10 * time.Second)
	pods, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + d.Name})
	if err != nil {
		t.Fatal(err)
	}
	victim := ""
	for _, p := range pods.Items {
		if podReady(&p) && p.DeletionTimestamp == nil {
			victim = p.Name
			killApp(t, &p)
			break
		}
	}
	if victim == "" {
		t.Fatalf("no ready pod of %s/%s to crash", ns, d.Name)
	}
	r := wait()
	deaths := appRestarts(ctx, t, ns, d)
	bad := r.total() - r.codes[http.StatusOK]
	fmt.Printf("node: 3 replicas, the app of %s killed 10 s into hey %d clients 40 s through the activator: %s; "+
		"%d answers other than 200; %d app restarts (load average %s)\n", victim, clients, r, bad, deaths, loadAvg())
	if deaths != 1 {
		t.Errorf("%d app restarts, want 1 (the app killed)", deaths)
	}
	if bad > clients {
		t.Errorf("%d answers other than 200, want at most %d (the requests at the dying app): %s", bad, clients, r)
	}
	if r.codes[http.StatusOK] < 1000 {
		t.Errorf("%d x 200, want at least 1,000: %s", r.codes[http.StatusOK], r)
	}
}

// killApp kills the app container of p with SIGKILL through the testbed's
// containerd (its CRI namespace k8s.io): the app crashes, the queue-proxy
// and the pod stay.
func killApp(t *testing.T, p *corev1.Pod) {
	t.Helper()
	id := ""
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == "app" {
			id = strings.TrimPrefix(s.ContainerID, "containerd://")
		}
	}
	if id == "" {
		t.Fatalf("pod %s has no running app container: %+v", p.Name, p.Status.ContainerStatuses)
	}
	sock := filepath.Join(os.Getenv("EBB_TESTBED_RUN_DIR"), "containerd", "containerd.sock")
	out, err := exec.Command("ctr", "--address", sock, "-n", "k8s.io", "task", "kill", "-s", "SIGKILL", id).CombinedOutput()
	if err != nil {
		t.Fatalf("ctr task kill %s (the app of %s): %v: %s", id, p.Name, err, out)
	}
}

// TestWakeWithKubeletStopped: on the real node, a copy of the example app
// at zero is woken by a request while the node's kubelet is stopped
// (SIGSTOP to the kubelet the testbed started, by the PID it recorded)
// for 20 s: the pod is placed on the node and nothing starts it. Within
// 20 s of the request (the autoscaler's bound is 15 s after the pod was
// placed) the Deployment has a Warning Event PodNotStarting naming the
// node, while the request waits; once the kubelet runs again the pod
// starts and the request is answered 200.
func TestWakeWithKubeletStopped(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "node-kubelet")
	d := helloCopy(t, ns, "stall", fastToZero)
	appArgs(t, d, "--latency=0s")
	createDeployment(t, d)
	h := host(ns, d.Name)
	// The first wake after creating it: the activators learn the revision.
	waitFor(t, 60*time.Second, "the activators know the revision", func() (bool, string) {
		code, _, err := get(ctx, env.activator, h, 60*time.Second)
		return err == nil && code == 200, fmt.Sprint(code, err)
	})
	toZeroNow(t, ns, d.Name, 120*time.Second)

	pid := testbedKubelet(t)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("stopping the kubelet (pid %d): %v", pid, err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Errorf("resuming the kubelet (pid %d): %v", pid, err)
			}
		}
	}
	t.Cleanup(resume)
	const stopped = 20 * time.Second
	sent := time.Now()
	got := make(chan answer, 1)
	go func() { got <- getBody(env.activator, h, 120*time.Second) }()
	var eventAfter time.Duration
	for time.Since(sent) < stopped {
		if _, ok := warningEvent(ctx, ns, d.Name, podfailure.ReasonPodNotStarting, "none of its containers has started"); ok && eventAfter == 0 {
			eventAfter = time.Since(sent)
		}
		time.Sleep(250 * time.Millisecond)
	}
	msg, _ := warningEvent(ctx, ns, d.Name, podfailure.ReasonPodNotStarting, "")
	status, reason, _ := readyCondition(ctx, t, ns, d.Name)
	resume()
	a := <-got
	fmt.Printf("node: a wake with the kubelet stopped for %v: the Event %s after %v (%s); the RevisionAutoscaler Ready %s %s; "+
		"the request got %s\n", stopped, podfailure.ReasonPodNotStarting, eventAfter.Round(100*time.Millisecond), msg, status, reason, a)
	if eventAfter == 0 {
		t.Errorf("no Warning Event %s within %v of the waking request", podfailure.ReasonPodNotStarting, stopped)
	}
	if reason != podfailure.ReasonPodNotStarting {
		t.Errorf("the RevisionAutoscaler's Ready condition %s %s while the kubelet was stopped, want %s", status, reason, podfailure.ReasonPodNotStarting)
	}
	if a.code != http.StatusOK || a.took < stopped {
		t.Errorf("the waking request: %s; want a 200 after the kubelet is back (at least %v)", a, stopped)
	}
}

// testbedKubelet is the PID of the kubelet the testbed started (its
// pids/kubelet.pid), checked to be a kubelet.
func testbedKubelet(t *testing.T) int {
	t.Helper()
	file := filepath.Join(os.Getenv("EBB_TESTBED_RUN_DIR"), "pids", "kubelet.pid")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the testbed's kubelet: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil || strings.TrimSpace(string(comm)) != "kubelet" {
		t.Fatalf("pid %d of %s is not a kubelet (%q, %v)", pid, file, comm, err)
	}
	return pid
}

// eventCounts are the Events of ns by object, type, reason and message,
// with their counts (a repeated Event is one with a count).
func eventCounts(t *testing.T, ns string) map[string]int32 {
	t.Helper()
	evs, err := env.client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]int32, len(evs.Items))
	for _, e := range evs.Items {
		key := e.Type + " " + e.Reason + " on " + e.InvolvedObject.Kind + " " + e.InvolvedObject.Name + ": " + e.Message
		out[key] += max(e.Count, 1)
	}
	return out
}

// checkQuiet fails on any Warning Event in ns that is new, or seen more
// often, since before (eventCounts), and prints how many Events of each
// type came: a draining pod is not unhealthy. The queue-proxy answers the
// kubelet's readiness probe ready through the whole drain, stays up until
// the app has stopped (QUEUE_AWAIT_APP_EXIT_SECONDS) and then exits just
// after answering the kubelet's next probe: the kubelet, which probes a
// terminating pod until its kill returns, has a whole period to finish it.
func checkQuiet(t *testing.T, ns string, before map[string]int32, what string) {
	t.Helper()
	normal, warning := int32(0), int32(0)
	for key, n := range eventCounts(t, ns) {
		more := n - before[key]
		if more <= 0 {
			continue
		}
		if !strings.HasPrefix(key, corev1.EventTypeWarning+" ") {
			normal += more
			continue
		}
		warning += more
		t.Errorf("%s: %d more of the Event %s", what, more, key)
	}
	fmt.Printf("node: %s: %d Normal and %d Warning Events in %s\n", what, normal, warning, ns)
}
