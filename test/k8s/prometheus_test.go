//go:build k8s

package k8s

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"ebb.dev/ebb/internal/promtest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/manifest/inject"
)

// prometheusBin is Debian's prometheus package's binary (.ci/run installs it).
const prometheusBin = "/usr/bin/prometheus"

// TestPrometheusScrapesEbb: a real Prometheus scrapes the testbed's Ebb
// where deploy/prometheus/prometheus.yml finds it (Debian's build has no
// Kubernetes discovery, so the test lists the pods as that file's jobs
// select them and gives Prometheus the targets in files): the autoscaler
// and activator pods by their prometheus.io annotations, every
// queue-proxy by its admin port; with the recording rules loaded, a
// revision under load has its series under Knative's names of both eras.
func TestPrometheusScrapesEbb(t *testing.T) {
	if _, err := os.Stat(prometheusBin); err != nil {
		t.Skip("prometheus is not installed (Debian package prometheus): skipping the Prometheus scrape of the testbed")
	}
	ctx := context.Background()
	ns := newNamespace(t, "prom")
	createApp(t, appDeployment(t, ns, "hello", map[string]string{"autoscaling.knative.dev/initial-scale": "0"}))
	waitFor(t, 30*time.Second, "revision hello autoscaled", func() (bool, string) {
		_, ok, state := status(ctx, ns, "hello")
		return ok, state
	})

	dir := t.TempDir()
	rules, err := filepath.Abs("../../deploy/prometheus/knative-otel-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ebbTargets, qpTargets := filepath.Join(dir, "ebb.json"), filepath.Join(dir, "queue-proxy.json")
	for _, f := range []string{ebbTargets, qpTargets} {
		if err := os.WriteFile(f, []byte("[]"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := fmt.Sprintf(`global: {scrape_interval: 1s, scrape_timeout: 900ms, evaluation_interval: 1s}
rule_files: [%q]
scrape_configs:
- job_name: ebb
  file_sd_configs: [{files: [%q], refresh_interval: 1s}]
- job_name: ebb-queue-proxy
  file_sd_configs: [{files: [%q], refresh_interval: 1s}]
`, rules, ebbTargets, qpTargets)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	web := l.Addr().String()
	l.Close()
	prom := exec.Command(prometheusBin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+web, "--log.level=warn")
	promLog, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	prom.Stdout, prom.Stderr = promLog, promLog
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		prom.Process.Kill()
		prom.Wait()
		if t.Failed() {
			data, _ := os.ReadFile(promLog.Name())
			t.Logf("prometheus log:\n%s", data)
		}
	}()

	rc := newRouteClient(t, env.client, ns, "hello")
	res, stop := rc.runLoad(10)
	defer stop()
	queries := []string{
		`up{job="ebb"} == 1`,
		`up{job="ebb-queue-proxy"} == 1`,
		fmt.Sprintf(`autoscaler_desired_pods{namespace_name=%q, revision_name="hello", configuration_name="hello"}`, ns),
		fmt.Sprintf(`sum(rate(activator_request_count{namespace_name=%q, revision_name="hello"}[10s])) by (response_code)`, ns),
		fmt.Sprintf(`sum(rate(revision_request_count{namespace_name=%q, revision_name="hello"}[10s])) by (response_code_class)`, ns),
		fmt.Sprintf(`kn_revision_pods_desired{k8s_namespace_name=%q, kn_revision_name="hello"}`, ns),
		fmt.Sprintf(`sum(rate(kn_serving_invocation_duration_seconds_count{k8s_namespace_name=%q, kn_revision_name="hello"}[10s]))`, ns),
		fmt.Sprintf(`histogram_quantile(0.99, sum(rate(http_server_request_duration_seconds_bucket{k8s_namespace_name=%q}[10s])) by (le))`, ns),
	}
	var missing []string
	var ebbN, qpN int
	deadline := time.Now().Add(60 * time.Second)
	for {
		ebbN = writePodTargets(t, ebbTargets, config.SystemNamespace, scrapedByAnnotation)
		qpN = writePodTargets(t, qpTargets, ns, queueProxyAdmin)
		missing = missing[:0]
		for _, q := range queries {
			if n, err := promtest.Series(web, q); err != nil || n == 0 {
				missing = append(missing, fmt.Sprintf("%s (%d series, %v)", q, n, err))
			}
		}
		if n, _ := promtest.Series(web, `up{job="ebb"} == 1`); n != ebbN || ebbN < 2 {
			missing = append(missing, fmt.Sprintf("%d of the %d annotated pods of %s up (want the autoscaler's and the activators')", n, ebbN, config.SystemNamespace))
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	stop()
	for _, m := range missing {
		t.Errorf("no series: %s", m)
	}
	t.Logf("load %s; %d annotated pods of %s and %d queue-proxies scraped; queries evaluated:\n%s", res, ebbN, config.SystemNamespace, qpN,
		strings.Join(queries, "\n"))
}

// scrapedByAnnotation is the job ebb's selection: a pod annotated
// prometheus.io/scrape "true", at prometheus.io/port and prometheus.io/path.
func scrapedByAnnotation(p *corev1.Pod) (addr, path string, ok bool) {
	a := p.Annotations
	if a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] == "" {
		return "", "", false
	}
	return net.JoinHostPort(p.Status.PodIP, a["prometheus.io/port"]), a["prometheus.io/path"], true
}

// queueProxyAdmin is the job ebb-queue-proxy's: the queue-proxy
// container's port named admin.
func queueProxyAdmin(p *corev1.Pod) (addr, path string, ok bool) {
	for _, c := range p.Spec.Containers {
		if c.Name != config.QueueProxyContainer {
			continue
		}
		for _, port := range c.Ports {
			if port.Name == inject.AdminPortName {
				return net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(port.ContainerPort))), "/metrics", true
			}
		}
	}
	return "", "", false
}

// writePodTargets writes the running pods of ns that sel selects as a
// file_sd target file; it returns how many.
func writePodTargets(t *testing.T, file, ns string, sel func(*corev1.Pod) (string, string, bool)) int {
	t.Helper()
	pods, err := env.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type group struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	groups := []group{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" || p.DeletionTimestamp != nil {
			continue
		}
		if addr, path, ok := sel(p); ok {
			groups = append(groups, group{Targets: []string{addr}, Labels: map[string]string{"__metrics_path__": path,
				"kubernetes_namespace": p.Namespace, "kubernetes_pod_name": p.Name}})
		}
	}
	data, err := json.Marshal(groups)
	if err != nil {
		t.Fatal(err)
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
	return len(groups)
}
