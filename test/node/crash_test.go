//go:build node

package node

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/podfailure"
)

// TestAppCrashUnderLoad: on the real node, a copy of the example app
// (one replica, min-scale 1) whose app exits after 300 requests (hello
// --exit-after), under hey 30 clients for 40 s through the activator's
// Service. The kubelet restarts it (then backs off). A request that never
// reached the app is never a 502: the queue-proxy proves it to the
// activator, which holds it for the replica or, once the crash loop is
// known, answers 503 naming the cause. The 502s are at most (app deaths
// + 1) x the clients in flight (those at the app when it died; before,
// every request while it was down: 420,136 in 60 s); every other answer
// is a 200 or a 503, and a 503 says the pods keep failing.
func TestAppCrashUnderLoad(t *testing.T) {
	ctx := context.Background()
	const clients = 30
	ns := newNamespace(t, "node-crash")
	d := helloCopy(t, ns, "crash", map[string]string{config.AnnotationMinScale: "1"})
	appArgs(t, d, "--latency", "5ms", "--exit-after", "300")
	createDeployment(t, d)
	waitReady(t, ns, d.Name, 1, 120*time.Second)
	r := runHey(t, env.activator, host(ns, d.Name), clients, 40*time.Second, "-t", "60")
	deaths := appRestarts(ctx, t, ns, d)
	fmt.Printf("node: app exiting after 300 requests, hey %d clients 40 s through the activator: %s; the app died %d times (load average %s)\n",
		clients, r, deaths, loadAvg())
	checkFailingLoad(t, r, deaths, clients)
	a := getBody(env.activator, host(ns, d.Name), 60*time.Second)
	fmt.Printf("node: after the load, a request got %s\n", a)
	// The answer after the load is a 200 (the replica is back between two
	// crashes) or a clear 503 naming the revision and a crash after
	// serving: a run the kubelet never saw ready (it served the
	// activator's requests and died first), after a replica ready for a
	// moment, is no crash at start.
	if a.code == http.StatusServiceUnavailable &&
		(!strings.Contains(a.body, "revision "+ns+"/"+d.Name) || !strings.Contains(a.body, "serving") || strings.Contains(a.body, "exits at start")) {
		t.Errorf("the 503 after the load: %s; want it to name the revision and a crash after serving", a)
	}
	checkCrashEvents(ctx, t, ns, d.Name, podfailure.ReasonContainerCrashedAfterStart)
}

// checkCrashEvents prints the Warning Events on the Deployment and fails
// when one says the app exits at start, or none has reason want.
func checkCrashEvents(ctx context.Context, t *testing.T, ns, name, want string) {
	t.Helper()
	evs, err := env.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Deployment,involvedObject.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, e := range evs.Items {
		if e.Type != corev1.EventTypeWarning {
			continue
		}
		fmt.Printf("node: Warning Event %s x%d: %s\n", e.Reason, max(e.Count, 1), e.Message)
		seen = seen || e.Reason == want
		if strings.Contains(e.Message, "exits at start") {
			t.Errorf("a Warning Event says the app exits at start: %s %s", e.Reason, e.Message)
		}
	}
	if !seen {
		t.Errorf("no Warning Event %s on deployment %s/%s", want, ns, name)
	}
}

// appRestarts is the sum of the restarts of the app containers of d's pods.
func appRestarts(ctx context.Context, t *testing.T, ns string, d interface{ GetName() string }) int {
	t.Helper()
	pods, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + d.GetName()})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		n += appRestartsOf(&p)
	}
	return n
}

func appRestartsOf(p *corev1.Pod) int {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == "app" {
			return int(s.RestartCount)
		}
	}
	return 0
}
