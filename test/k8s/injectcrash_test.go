//go:build k8s

package k8s

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"ebb.dev/ebb/pkg/config"
)

// admitWithin bounds how long an opted-in pod may wait for the webhook
// while a replica is down: the API server's timeoutSeconds (10s, a
// review lost with its replica's node) and a retry.
const admitWithin = 15 * time.Second

// webhookName is the webhook's name as the API server reports a failed
// call ("failed calling webhook NAME"), read from the configuration.
func webhookName(t *testing.T, ctx context.Context) string {
	t.Helper()
	cfg, err := env.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, webhookConfig, metav1.GetOptions{})
	if err != nil || len(cfg.Webhooks) != 1 {
		t.Fatalf("MutatingWebhookConfiguration %s: %v", webhookConfig, err)
	}
	return cfg.Webhooks[0].Name
}

// refusedByWebhook: the API server refused a create because its call to
// the webhook failed (failurePolicy Fail), not because the webhook
// answered no.
func refusedByWebhook(err error, name string) bool {
	return err != nil && strings.Contains(err.Error(), fmt.Sprintf("failed calling webhook %q", name))
}

// webhookProbe creates opted-in pods (dry runs) one after another until
// check, each as a ReplicaSet does: a create the API server refuses
// because its call to the webhook failed (a replica died with the review
// in flight) is tried again, with back-off, for up to admitWithin. Every
// pod the API server admits must have the queue-proxy.
type webhookProbe struct {
	stop    func()
	mu      sync.Mutex
	pods    int      // admitted, each with the sidecar
	refused []string // creates refused by the failing webhook, then tried again
	failed  []string // admitted without the sidecar, refused for admitWithin, or another error
}

// proveWebhook probes every interval until check.
func proveWebhook(t *testing.T, ns string, every time.Duration) *webhookProbe {
	name := webhookName(t, context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	w := &webhookProbe{}
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			w.admitOne(ctx, ns, name)
			select {
			case <-ctx.Done():
			case <-time.After(every):
			}
		}
	})
	w.stop = func() { cancel(); wg.Wait() }
	t.Cleanup(w.stop)
	return w
}

// admitOne creates one pod, again while the webhook call fails.
func (w *webhookProbe) admitOne(ctx context.Context, ns, name string) {
	began, backoff := time.Now(), 50*time.Millisecond
	for {
		pod, err := dryRunPod(ctx, ns, true)
		at := time.Now().Format("15:04:05.000") + ": "
		w.mu.Lock()
		switch {
		case ctx.Err() != nil:
		case err == nil && hasSidecar(pod):
			w.pods++
		case err == nil:
			w.failed = append(w.failed, at+"admitted without the queue-proxy: containers "+strings.Join(containerNames(pod), ","))
		case !refusedByWebhook(err, name):
			w.failed = append(w.failed, at+err.Error())
		case time.Since(began) > admitWithin:
			w.failed = append(w.failed, fmt.Sprintf("%srefused for %v, longer than %v: %v", at, time.Since(began).Round(time.Millisecond), admitWithin, err))
		default:
			w.refused = append(w.refused, at+err.Error())
			w.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		w.mu.Unlock()
		return
	}
}

func (w *webhookProbe) check(t *testing.T) {
	t.Helper()
	if w.stop != nil {
		w.stop()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.failed) > 0 || w.pods == 0 {
		t.Errorf("the webhook: %d pods admitted with the queue-proxy; %d failed: %v", w.pods, len(w.failed), w.failed)
		return
	}
	t.Logf("the webhook: %d pods admitted, every one with the queue-proxy; %d creates refused first (the webhook call failed), then admitted: %v",
		w.pods, len(w.refused), w.refused[:min(len(w.refused), 3)])
}

// pendingApp is a Deployment Ebb does not scale whose pods are opted in
// to injection and never scheduled (a nodeSelector no node has): the
// ReplicaSet creates them, through the webhook, and they cost nothing.
func pendingApp(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name, config.LabelEnabled: "true"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{NodeSelector: map[string]string{"ebb.dev/test-node": "none"},
					Containers: []corev1.Container{{Name: "app", Image: imageHello + ":dev"}}},
			},
		},
	}
}

// scaleDeployment sets a Deployment's replicas.
func scaleDeployment(t *testing.T, ctx context.Context, ns, name string, n int32) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := env.client.AppsV1().Deployments(ns).GetScale(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.Replicas = n
		_, err = env.client.AppsV1().Deployments(ns).UpdateScale(ctx, name, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("scaling %s/%s to %d: %v", ns, name, n, err)
	}
}

// podsOf counts the pods of app name, and names those without the
// queue-proxy.
func podsOf(ctx context.Context, ns, name string) (int, []string, error) {
	pods, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return 0, nil, err
	}
	var bare []string
	for i := range pods.Items {
		if !hasSidecar(&pods.Items[i]) {
			bare = append(bare, pods.Items[i].Name)
		}
	}
	return len(pods.Items), bare, nil
}

// failedCreates are the messages of the namespace's FailedCreate Events
// (the ReplicaSet controller's, for a refused pod).
func failedCreates(ctx context.Context, ns string) []string {
	evs, err := env.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedCreate"})
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, e := range evs.Items {
		out = append(out, fmt.Sprintf("%s %s/%s (x%d): %s", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, max(e.Count, 1), e.Message))
	}
	return out
}

// webhookReplica is the autoscaler pod the API server's webhook calls go
// to: the one the harness's forwarder has the most connections open to,
// else the webhook Service's first ready endpoint, where it sends the
// next (serviceProxy).
func webhookReplica(ctx context.Context) (string, error) {
	sls, err := env.client.DiscoveryV1().EndpointSlices(ebbNS).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + webhookService})
	if err != nil {
		return "", err
	}
	open := map[string]int{}
	for _, a := range env.webhook.upstreams() {
		host, _, _ := strings.Cut(a, ":")
		open[host]++
	}
	var first, busiest string
	for _, sl := range sls.Items {
		for _, ep := range sl.Endpoints {
			if (ep.Conditions.Ready != nil && !*ep.Conditions.Ready) || ep.TargetRef == nil || len(ep.Addresses) == 0 {
				continue
			}
			if first == "" {
				first = ep.TargetRef.Name
			}
			if n := open[ep.Addresses[0]]; n > 0 && (busiest == "" || n > open[busiest]) {
				busiest = ep.TargetRef.Name
			}
		}
	}
	if busiest != "" {
		return busiest, nil
	}
	if first != "" {
		return first, nil
	}
	return "", errors.New("the webhook Service has no ready endpoint")
}

// TestInjectionThroughAReplicaCrash: SIGKILL of the autoscaler replica
// serving the webhook while opted-in pods are being created, by a
// ReplicaSet and by dry runs (docs/kubernetes.md, "Failure policy"). No
// pod is created without the queue-proxy: a create whose review died
// with the replica is refused (failurePolicy Fail) and tried again; the
// ReplicaSet makes all of its pods, each injected, within admitWithin.
func TestInjectionThroughAReplicaCrash(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "injectcrash")
	waitInjecting(t, ctx, ns)
	first, err := autoscalerPods(ctx)
	if err != nil || len(first) != autoscalers {
		t.Fatalf("autoscaler pods %v (%v), want %d", first, err, autoscalers)
	}

	probe := proveWebhook(t, ns, 200*time.Millisecond)
	const n = 40
	createApp(t, pendingApp(ns, "rs", 0))
	victim, err := webhookReplica(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := env.kubelet.process(ebbNS, victim, "autoscaler")
	if p == nil {
		t.Fatalf("no autoscaler process for %s", victim)
	}
	// The tests after need the killed replica back, holding its buckets:
	// until its Lease expires, the fleet looks balanced without it.
	pid := p.pid()
	t.Cleanup(func() {
		waitFor(t, 60*time.Second, "the killed autoscaler restarted", func() (bool, string) {
			return p.pid() != pid, fmt.Sprintf("pid %d", p.pid())
		})
		waitBalanced(t, context.Background(), 60*time.Second, first)
	})
	// A burst of creates, so that reviews are in flight at the kill.
	bctx, stopBurst := context.WithTimeout(ctx, 3*time.Second)
	defer stopBurst()
	burst := &webhookProbe{}
	name := webhookName(t, ctx)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for bctx.Err() == nil {
				burst.admitOne(ctx, ns, name) // its retries outlive the burst
			}
		})
	}
	time.Sleep(time.Second)
	// Frozen first, so that reviews are surely in flight at the kill: the
	// burst's, and the ReplicaSet's first.
	p.freeze()
	time.Sleep(500 * time.Millisecond)
	scaleDeployment(t, ctx, ns, "rs", n)
	time.Sleep(500 * time.Millisecond)
	killed := time.Now()
	p.kill(15 * time.Second) // a crash; back well after the test's pods
	t.Logf("killed %s (serving the webhook, frozen for 1s) while %s/rs scales 0 -> %d and dry runs are in flight", victim, ns, n)
	wg.Wait()
	burst.check(t)
	if len(burst.refused) == 0 && len(burst.failed) == 0 {
		t.Errorf("no create was refused: the kill hit no review in flight, so the test did not test the crash (%s not the replica the API server calls?)", victim)
	}

	waitFor(t, admitWithin+10*time.Second, fmt.Sprintf("the %d pods of rs created", n), func() (bool, string) {
		got, bare, err := podsOf(ctx, ns, "rs")
		if len(bare) > 0 {
			t.Fatalf("pods of rs created without the queue-proxy: %v", bare)
		}
		return got == n, fmt.Sprintf("%d pods (%v); FailedCreate: %q", got, err, failedCreates(ctx, ns))
	})
	failed := failedCreates(ctx, ns)
	t.Logf("the %d pods of rs created, every one with the queue-proxy, %v after the kill; FailedCreate Events: %q",
		n, time.Since(killed).Round(time.Millisecond), failed)
	if !slices.ContainsFunc(failed, func(e string) bool { return strings.Contains(e, fmt.Sprintf("failed calling webhook %q", name)) }) {
		t.Errorf("FailedCreate Events %q: want the ReplicaSet's create that died with the replica, naming the webhook", failed)
	}
	time.Sleep(2 * time.Second)
	probe.check(t)
}
