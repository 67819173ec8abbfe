//go:build k8s

package k8s

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"ebb.dev/ebb/pkg/config"
	kplat "ebb.dev/ebb/pkg/platform/kubernetes/reconciler"
	"ebb.dev/ebb/pkg/platform/kubernetes/webhook"
	"ebb.dev/ebb/pkg/stats"
)

// The webhook's objects, as deploy/kubernetes/webhook.yaml names them.
const (
	webhookService = config.WebhookServiceName
	webhookConfig  = config.WebhookConfigName
)

// webhookURL is where the API server calls the webhook: the harness's
// forwarder of the webhook Service (the testbed has no kube-proxy, so the
// Service's address leads nowhere).
func webhookURL() string { return "https://" + env.webhook.addr() + webhook.InjectPath }

// setWebhookURL points every webhook of the configuration at url instead
// of its Service; the autoscalers keep its caBundle.
func setWebhookURL(ctx context.Context, url string) error {
	return editWebhooks(ctx, func(w *admissionregistrationv1.MutatingWebhook) {
		w.ClientConfig.Service = nil
		w.ClientConfig.URL = &url
	})
}

// editWebhooks applies edit to every webhook of the configuration,
// retrying on a conflict.
func editWebhooks(ctx context.Context, edit func(*admissionregistrationv1.MutatingWebhook)) error {
	api := env.client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cfg, err := api.Get(ctx, webhookConfig, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for i := range cfg.Webhooks {
			edit(&cfg.Webhooks[i])
		}
		_, err = api.Update(ctx, cfg, metav1.UpdateOptions{})
		return err
	})
}

// dryRunPod creates (dry run: admission runs, nothing is stored) a pod of
// the hello image, opted in or not, and returns what the API server made
// of it.
func dryRunPod(ctx context.Context, ns string, optIn bool) (*corev1.Pod, error) {
	// As a ReplicaSet makes it (the owner need not exist for a dry run).
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "dry-abc-", Labels: map[string]string{"app": "dry", "pod-template-hash": "abc"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "dry-abc",
				UID: "00000000-0000-4000-8000-000000000001", Controller: ptr(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: imageHello + ":dev"}}},
	}
	if optIn {
		pod.Labels[config.LabelEnabled] = "true"
	}
	return env.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
}

func hasSidecar(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == config.QueueProxyContainer })
}

// shortApp is deploy/kubernetes/example-app.yaml (the short form: label,
// annotations, app container) renamed, with extra annotations.
func shortApp(t *testing.T, ns, name string, ann map[string]string) *appsv1.Deployment {
	t.Helper()
	data, err := os.ReadFile("../../deploy/kubernetes/example-app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return renamedApp(t, "deploy/kubernetes/example-app.yaml", data, ns, name,
		map[string]string{"app": name, config.LabelEnabled: "true"}, ann)
}

// TestSidecarInjection: the real API server calls Ebb's webhook. A
// Deployment written in the short form (label, annotations, app only)
// gets the queue-proxy in its pods, scales from zero through the
// activator and back to zero. With the webhook unreachable, a Deployment
// without the label is created and runs untouched, while an opted-in pod
// is refused (failurePolicy Fail). Admission latency is measured with
// dry-run creates.
func TestSidecarInjection(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "inject")
	waitInjecting(t, ctx, ns)
	measureAdmission(t, ctx, ns)

	createApp(t, shortApp(t, ns, "short", map[string]string{"autoscaling.knative.dev/initial-scale": "0"}))
	waitFor(t, 30*time.Second, "revision short at 0 replicas behind the activators", func() (bool, string) {
		to, addrs := route(ctx, ns, "short")
		_, ok, state := status(ctx, ns, "short")
		return to == kplat.RouteActivator && len(addrs) == activators && ok, fmt.Sprintf("route %s %v; %s", to, addrs, state)
	})
	rc := newRouteClient(t, env.client, ns, "short")
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	began := time.Now()
	code, _, err := rc.get(rctx)
	if err != nil || code != http.StatusOK {
		t.Fatalf("first request: status %d, error %v; want 200 (activator log:\n%s)", code, err, logTail(activatorLog(), 20))
	}
	t.Logf("the first request took %v (scale from zero of an injected revision)", time.Since(began).Round(time.Millisecond))
	checkInjectedPod(t, ctx, ns, "short")
	waitFor(t, 60*time.Second, "revision short back at 0 replicas", func() (bool, string) {
		n, err := replicas(ctx, ns, "short")
		return n == 0, fmt.Sprintf("%d replicas (%v)", n, err)
	})

	// The webhook down (unreachable): only opted-in pods wait for it.
	if err := setWebhookURL(ctx, "https://127.0.0.1:1"+webhook.InjectPath); err != nil {
		t.Fatal(err)
	}
	downSince := time.Now()
	t.Cleanup(func() {
		if err := setWebhookURL(context.Background(), webhookURL()); err != nil {
			t.Errorf("restoring the webhook URL: %v", err)
		}
	})
	plain := shortApp(t, ns, "plain", nil)
	plain.Labels, plain.Spec.Template.Labels = nil, map[string]string{"app": "plain"}
	plain.Spec.Replicas = ptr(int32(1))
	createApp(t, plain)
	waitFor(t, 30*time.Second, "Deployment plain (no label) with a ready pod while the webhook is down", func() (bool, string) {
		return readyPods(ctx, ns, "plain") == 1, fmt.Sprintf("%d ready pods", readyPods(ctx, ns, "plain"))
	})
	pods, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=plain"})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("pods of plain: %v", err)
	}
	if p := pods.Items[0]; len(p.Spec.Containers) != 1 || hasSidecar(&p) {
		t.Errorf("pod %s of an unlabelled Deployment has containers %v: want the app alone", p.Name, containerNames(&p))
	}
	if _, err := dryRunPod(ctx, ns, false); err != nil {
		t.Errorf("an unlabelled pod while the webhook is down: %v; want it created", err)
	}
	name := webhookName(t, ctx)
	if _, err := dryRunPod(ctx, ns, true); !refusedByWebhook(err, name) {
		t.Errorf("an opted-in pod while the webhook is down: error %v; want it refused by the failing webhook", err)
	}
	webhookOutage(t, ctx, ns, name, downSince)
	bareRevision(t, ctx, ns)
}

// setFailurePolicy sets the failurePolicy of every webhook of the
// configuration.
func setFailurePolicy(ctx context.Context, fp admissionregistrationv1.FailurePolicyType) error {
	return editWebhooks(ctx, func(w *admissionregistrationv1.MutatingWebhook) { w.FailurePolicy = &fp })
}

// bareRevision: an operator's mistake, failurePolicy Ignore while the
// webhook is down, lets an opted-in revision's pod through without the
// queue-proxy; the reconciler names it in a Warning SidecarMissing Event
// with the fix, and the fix (the webhook back, kubectl rollout restart)
// replaces it with an injected pod (docs/kubernetes.md, "Failure policy").
func bareRevision(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	restore := func() {
		if err := setFailurePolicy(context.Background(), admissionregistrationv1.Fail); err != nil {
			t.Errorf("restoring failurePolicy Fail: %v", err)
		}
		if err := setWebhookURL(context.Background(), webhookURL()); err != nil {
			t.Errorf("restoring the webhook URL: %v", err)
		}
	}
	t.Cleanup(restore)
	if err := setWebhookURL(ctx, "https://127.0.0.1:1"+webhook.InjectPath); err != nil {
		t.Fatal(err)
	}
	if err := setFailurePolicy(ctx, admissionregistrationv1.Ignore); err != nil {
		t.Fatal(err)
	}
	d := shortApp(t, ns, "bare", map[string]string{"autoscaling.knative.dev/initial-scale": "1", "autoscaling.knative.dev/min-scale": "1"})
	d.Spec.Template.Spec.NodeSelector = map[string]string{"ebb.dev/test-node": "none"}       // the pods need not run
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType} // a pending pod never becomes available
	createApp(t, d)
	var e *corev1.Event
	waitFor(t, 30*time.Second, "a SidecarMissing Event on Deployment bare", func() (bool, string) {
		var seen string
		e, seen = findEvent(ctx, ns, "Deployment", "bare", corev1.EventTypeWarning, "SidecarMissing", "run without the queue-proxy",
			"kubectl -n "+ns+" rollout restart deployment bare")
		return e != nil, seen
	})
	t.Logf("a pod let through bare: %s", e.Message)
	restore()
	waitInjecting(t, ctx, ns)
	// kubectl rollout restart: a new template annotation.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := env.client.AppsV1().Deployments(ns).Get(ctx, "bare", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] = time.Now().Format(time.RFC3339)
		_, err = env.client.AppsV1().Deployments(ns).Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the pods of bare replaced by injected ones", func() (bool, string) {
		got, bare, err := podsOf(ctx, ns, "bare")
		return got > 0 && len(bare) == 0, fmt.Sprintf("%d pods, without the queue-proxy %v (%v)", got, bare, err)
	})
}

// webhookOutage: while no replica answers the webhook (the whole fleet
// down), an opted-in Deployment's pods are not created, and its
// ReplicaSet's Warning FailedCreate Event names the webhook; once a
// replica answers again, they are created, injected
// (docs/kubernetes.md, "Failure policy").
func webhookOutage(t *testing.T, ctx context.Context, ns, name string, downSince time.Time) {
	t.Helper()
	createApp(t, pendingApp(ns, "waits", 2))
	var events []string
	waitFor(t, 30*time.Second, "a FailedCreate Event naming the webhook", func() (bool, string) {
		events = failedCreates(ctx, ns)
		for _, e := range events {
			if strings.HasPrefix(e, corev1.EventTypeWarning+" ReplicaSet/waits-") && strings.Contains(e, fmt.Sprintf("failed calling webhook %q", name)) {
				return true, ""
			}
		}
		return false, fmt.Sprint(events)
	})
	if got, _, err := podsOf(ctx, ns, "waits"); got != 0 || err != nil {
		t.Errorf("%d pods of an opted-in Deployment created while the webhook is down (%v); want none", got, err)
	}
	t.Logf("while the webhook is down: no pod, and %q", events[:1])
	time.Sleep(5 * time.Second) // an outage of some seconds: the ReplicaSet backs off
	if err := setWebhookURL(ctx, webhookURL()); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	outage := back.Sub(downSince)
	waitFor(t, 60*time.Second, "the pods of waits created once the webhook answers", func() (bool, string) {
		got, bare, err := podsOf(ctx, ns, "waits")
		if len(bare) > 0 {
			t.Fatalf("pods of waits created without the queue-proxy: %v", bare)
		}
		return got == 2, fmt.Sprintf("%d pods (%v)", got, err)
	})
	t.Logf("its 2 pods created, injected, %v after the webhook answered again (outage about %v)",
		time.Since(back).Round(time.Millisecond), outage.Round(time.Second))
}

// waitInjecting waits for the webhook to inject (its caBundle published,
// a dry-run pod gets the sidecar).
func waitInjecting(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	waitFor(t, 60*time.Second, "the webhook injecting (caBundle published, a dry-run pod gets the sidecar)", func() (bool, string) {
		pod, err := dryRunPod(ctx, ns, true)
		if err != nil {
			return false, err.Error()
		}
		return hasSidecar(pod), fmt.Sprintf("containers %d", len(pod.Spec.Containers))
	})
}

func containerNames(p *corev1.Pod) []string {
	var out []string
	for _, c := range p.Spec.Containers {
		out = append(out, c.Name)
	}
	return out
}

// checkInjectedPod: the revision's pod as stored has the sidecar the
// webhook adds: the app's port behind it, its revision, the drain.
func checkInjectedPod(t *testing.T, ctx context.Context, ns, name string) {
	t.Helper()
	pods, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("pods of %s: %v", name, err)
	}
	p := pods.Items[0]
	if len(p.Spec.Containers) != 2 || !hasSidecar(&p) {
		t.Fatalf("pod %s containers %v: want app and queue-proxy", p.Name, containerNames(&p))
	}
	qpEnv := map[string]string{}
	for _, e := range p.Spec.Containers[1].Env {
		qpEnv[e.Name] = e.Value
	}
	want := map[string]string{config.EnvUserPort: "8080", config.EnvServingRevision: name, config.EnvServingConfiguration: name, config.EnvContainerConcurrency: "0",
		config.EnvUpstreamProtocol: "http1", config.EnvDrainPeriod: "15"}
	for k, v := range want {
		if qpEnv[k] != v {
			t.Errorf("queue-proxy %s = %q, want %q", k, qpEnv[k], v)
		}
	}
	if g := p.Spec.TerminationGracePeriodSeconds; g == nil || *g != 320 {
		t.Errorf("terminationGracePeriodSeconds %v, want 320 (drain 15s + the app's 5s margin + timeout 300s)", g)
	}
	// The proxy marker: the autoscaler made the install's secret, the
	// webhook gave the sidecar its namespace's (derived from it, as the
	// activator derives it), and the activator runs with it.
	s, err := env.client.CoreV1().Secrets(ebbNS).Get(ctx, stats.ProxySecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the install's proxy secret: %v", err)
	}
	install := string(s.Data[stats.ProxySecretKey])
	if got, want := qpEnv[stats.ProxySecretEnv], stats.NamespaceProxySecret(install, ns); install == "" || got != want {
		t.Errorf("queue-proxy %s = %q, want %s's secret %q (install secret %q)", stats.ProxySecretEnv, got, ns, want, install)
	}
	if log := logTail(activatorLog(), 1000); strings.Contains(log, "no proxy secret") {
		t.Errorf("the activator runs without the proxy secret:\n%s", log)
	}
}

// measureAdmission times dry-run pod creates with and without the webhook
// (opted in or not), alternately, and logs the percentiles: the difference
// is the webhook's cost seen by the API server (TLS included).
func measureAdmission(t *testing.T, ctx context.Context, ns string) {
	const n = 100
	before := webhookHistogram(ctx)
	var with, without []time.Duration
	for range n {
		for _, optIn := range []bool{true, false} {
			start := time.Now()
			if _, err := dryRunPod(ctx, ns, optIn); err != nil {
				t.Fatalf("dry-run create (opted in %v): %v", optIn, err)
			}
			d := time.Since(start)
			if optIn {
				with = append(with, d)
			} else {
				without = append(without, d)
			}
		}
	}
	pct := func(ds []time.Duration, p int) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[(len(s)-1)*p/100].Round(10 * time.Microsecond)
	}
	t.Logf("admission of a pod create (dry run, %d each): with the webhook p50 %v p99 %v; without p50 %v p99 %v",
		n, pct(with, 50), pct(with, 99), pct(without, 50), pct(without, 99))
	all := webhookHistogram(ctx)
	t.Logf("the webhook's own answer time (ebb_webhook_admission_duration_seconds of the autoscalers): "+
		"the %d dry-run pods: %s; all reviews since the autoscalers started: %s", n, all.minus(before), all)
}

// admissionCounts are the autoscalers' admission histograms summed: how
// many reviews, and how many answered within 1ms and 5ms.
type admissionCounts struct {
	total, le1, le5 float64
	unread          []string
}

func (c admissionCounts) minus(o admissionCounts) admissionCounts {
	return admissionCounts{c.total - o.total, c.le1 - o.le1, c.le5 - o.le5, append(c.unread, o.unread...)}
}

func (c admissionCounts) String() string {
	if c.total == 0 {
		return fmt.Sprintf("no review counted (%v)", c.unread)
	}
	return fmt.Sprintf("%.0f reviews, %.1f%% within 1ms, %.1f%% within 5ms (unread: %v)", c.total, 100*c.le1/c.total, 100*c.le5/c.total, c.unread)
}

// webhookHistogram reads the autoscalers' ebb_webhook_admission_duration_seconds.
func webhookHistogram(ctx context.Context) admissionCounts {
	var c admissionCounts
	pods, err := env.client.CoreV1().Pods(ebbNS).List(ctx, metav1.ListOptions{LabelSelector: "app=" + autoscalerName})
	if err != nil {
		c.unread = append(c.unread, err.Error())
		return c
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.PodIP == "" {
			continue // an autoscaler replaced by an earlier test
		}
		resp, err := http.Get("http://" + net.JoinHostPort(p.Status.PodIP, itoa(config.AutoscalerAdminPort)) + "/metrics")
		if err != nil {
			c.unread = append(c.unread, err.Error())
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(body), "\n") {
			name, val, ok := strings.Cut(line, " ")
			f, err := strconv.ParseFloat(val, 64)
			if !ok || err != nil {
				continue
			}
			switch name {
			case "ebb_webhook_admission_duration_seconds_count":
				c.total += f
			case `ebb_webhook_admission_duration_seconds_bucket{le="0.001"}`:
				c.le1 += f
			case `ebb_webhook_admission_duration_seconds_bucket{le="0.005"}`:
				c.le5 += f
			}
		}
	}
	return c
}
