package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"ebb.dev/ebb/internal/promtest"
)

// prometheusBin is Debian's prometheus package's binary (.ci/run installs it).
const prometheusBin = "/usr/bin/prometheus"

// knativeQueries are the queries of Knative Serving's Grafana dashboards
// for the autoscaler, the activator and the revisions' requests (its
// "scaling debugging" and "revision HTTP requests" dashboards), written
// for the revision hello in default.
var knativeQueries = []string{
	`sum(autoscaler_actual_pods{namespace_name="default", configuration_name="hello", revision_name="hello"})`,
	`sum(autoscaler_desired_pods{namespace_name="default", configuration_name="hello", revision_name="hello"})`,
	`sum(autoscaler_requested_pods{namespace_name="default", configuration_name="hello", revision_name="hello"})`,
	`sum(autoscaler_stable_request_concurrency{namespace_name="default", configuration_name="hello", revision_name="hello"})`,
	`sum(autoscaler_panic_request_concurrency{namespace_name="default", configuration_name="hello", revision_name="hello"})`,
	`sum(autoscaler_target_concurrency_per_pod{namespace_name="default", configuration_name="hello", revision_name="hello"})`,
	`sum(autoscaler_excess_burst_capacity{namespace_name="default", configuration_name="hello", revision_name="hello"})`,
	`sum(autoscaler_panic_mode{namespace_name="default", configuration_name="hello", revision_name="hello"})`,
	`sum(activator_request_concurrency{namespace_name="default", configuration_name="hello", revision_name="hello"})`,
	`sum(rate(activator_request_count{namespace_name="default", revision_name="hello"}[30s])) by (response_code_class)`,
	`histogram_quantile(0.99, sum(rate(activator_request_latencies_bucket{namespace_name="default", revision_name="hello"}[30s])) by (le))`,
	`sum(rate(revision_request_count{namespace_name="default", configuration_name="hello", revision_name="hello"}[30s])) by (response_code)`,
	`sum(rate(revision_app_request_count{namespace_name="default", revision_name="hello"}[30s])) by (response_code_class)`,
	`histogram_quantile(0.5, sum(rate(revision_request_latencies_bucket{namespace_name="default", revision_name="hello"}[30s])) by (le))`,
	`histogram_quantile(0.99, sum(rate(revision_app_request_latencies_bucket{namespace_name="default", revision_name="hello"}[30s])) by (le))`,
	`sum(revision_queue_depth{namespace_name="default", revision_name="hello"})`,
}

// knativeOTelQueries are the same dashboards' queries under Knative's
// OpenTelemetry-era names (Serving 1.19 and later), which Prometheus
// records from Ebb's series with deploy/prometheus/knative-otel-rules.yaml.
var knativeOTelQueries = []string{
	`sum(kn_revision_pods_count{k8s_namespace_name="default", kn_configuration_name="hello", kn_revision_name="hello"})`,
	`sum(kn_revision_pods_desired{k8s_namespace_name="default", kn_configuration_name="hello", kn_revision_name="hello"})`,
	`sum(kn_revision_pods_requested{k8s_namespace_name="default", kn_configuration_name="hello", kn_revision_name="hello"})`,
	`sum(kn_revision_concurrency_stable{k8s_namespace_name="default", kn_configuration_name="hello", kn_revision_name="hello"})`,
	`sum(kn_revision_concurrency_panic{k8s_namespace_name="default", kn_configuration_name="hello", kn_revision_name="hello"})`,
	`sum(kn_revision_concurrency_target{k8s_namespace_name="default", kn_configuration_name="hello", kn_revision_name="hello"})`,
	`sum(kn_revision_capacity_excess{k8s_namespace_name="default", kn_configuration_name="hello", kn_revision_name="hello"})`,
	`max(kn_revision_panic_mode{k8s_namespace_name="default", kn_revision_name="hello"})`,
	`sum(kn_revision_request_concurrency{k8s_namespace_name="default", kn_revision_name="hello"})`,
	`sum(rate(http_server_request_duration_seconds_count{k8s_namespace_name="default", kn_revision_name="hello"}[30s])) by (http_response_status_code)`,
	`histogram_quantile(0.99, sum(rate(http_server_request_duration_seconds_bucket{k8s_namespace_name="default", kn_revision_name="hello"}[30s])) by (le))`,
	`sum(rate(kn_serving_invocation_duration_seconds_count{k8s_namespace_name="default", kn_revision_name="hello", http_response_status_code=~"2.."}[30s]))`,
	`histogram_quantile(0.99, sum(rate(kn_serving_invocation_duration_seconds_bucket{k8s_namespace_name="default", kn_revision_name="hello"}[30s])) by (le))`,
	`sum(kn_serving_queue_depth{k8s_namespace_name="default", kn_revision_name="hello"})`,
	`histogram_quantile(0.99, sum(rate(kn_autoscaler_scrape_duration_seconds_bucket[30s])) by (le))`,
}

// TestEndToEndPrometheus: a real Prometheus scrapes a local Ebb (the
// autoscaler with its embedded activator, and every queue-proxy) while a
// revision scales from zero under load, and evaluates every query of
// deploy/grafana's dashboard and of Knative's dashboards: each returns
// series.
func TestEndToEndPrometheus(t *testing.T) {
	if _, err := os.Stat(prometheusBin); err != nil {
		t.Skip("prometheus is not installed (Debian package prometheus): skipping the Prometheus end-to-end test")
	}
	bin := binaries(t)
	// A limit, so that the queue-proxy reports its queue depth.
	e := startEbb(t, map[string]string{"config.yaml": e2eConfig, "hello.yaml": strings.Replace(e2eRevision(bin),
		`autoscaling.knative.dev/max-scale: "8"`, `autoscaling.knative.dev/max-scale: "8"`+"\n        autoscaling.ebb.dev/container-concurrency: \"10\"", 1)})
	dir := t.TempDir()
	targets := filepath.Join(dir, "queueproxies.json")
	if err := os.WriteFile(targets, []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	rules, err := filepath.Abs("../../deploy/prometheus/knative-otel-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`global: {scrape_interval: 1s, scrape_timeout: 900ms, evaluation_interval: 1s}
rule_files: [%q]
scrape_configs:
- job_name: ebb-autoscaler
  static_configs: [{targets: [%q]}]
- job_name: ebb-queue-proxy
  file_sd_configs: [{files: [%q], refresh_interval: 1s}]
`, rules, e.api, targets)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	web := freeAddr(t)
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
			t.Logf("prometheus log:\n%s", tail(string(data), 30))
		}
	}()

	// From zero under load: a cold start through the activator, then
	// replicas whose queue-proxies Prometheus learns from the file.
	if code, _ := get(t, e); code != http.StatusOK {
		t.Fatalf("first request: %d", code)
	}
	load := startHey(t, e, "-z", "25s", "-c", "20")
	queries := dashboardQueries(t)
	queries = append(queries, knativeQueries...)
	queries = append(queries, knativeOTelQueries...)
	deadline := time.Now().Add(22 * time.Second)
	var missing []string
	for {
		writeTargets(t, targets, bin)
		missing = missing[:0]
		for _, q := range queries {
			if n, err := promtest.Series(web, q); err != nil || n == 0 {
				missing = append(missing, fmt.Sprintf("%s (%d series, %v)", q, n, err))
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	waitHey(t, load)
	for _, m := range missing {
		t.Errorf("no series: %s", m)
	}
	t.Logf("%d queries evaluated by Prometheus (%d of deploy/grafana/ebb-dashboard.json, %d of Knative's dashboards, "+
		"%d of the same under Knative's OpenTelemetry names, recorded by deploy/prometheus/knative-otel-rules.yaml):\n%s",
		len(queries), len(queries)-len(knativeQueries)-len(knativeOTelQueries), len(knativeQueries), len(knativeOTelQueries),
		strings.Join(queries, "\n"))
}

// dashboardQueries are the queries of deploy/grafana's dashboard for the
// revision hello in default, a rate window of 30s.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../../deploy/grafana/ebb-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels json.RawMessage `json:"panels"`
	}
	var d struct {
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				q := strings.NewReplacer("$namespace", "default", "$revision", "hello", "$__rate_interval", "30s").Replace(tg.Expr)
				out = append(out, q)
			}
			var nested []panel
			if len(p.Panels) > 0 && json.Unmarshal(p.Panels, &nested) == nil {
				walk(nested)
			}
		}
	}
	walk(d.Panels)
	if len(out) < 20 {
		t.Fatalf("%d queries in the dashboard; expected more", len(out))
	}
	return out
}

// writeTargets lists the admin ports of this test binary's queue-proxies
// (read from their environment) for Prometheus' file discovery.
func writeTargets(t *testing.T, path, bin string) {
	t.Helper()
	out, _ := exec.Command("pgrep", "-f", filepath.Join(bin, "queueproxy")).Output()
	var addrs []string
	for _, pid := range strings.Fields(string(out)) {
		env, err := os.ReadFile("/proc/" + pid + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(env), "\x00") {
			if port, ok := strings.CutPrefix(kv, "QUEUE_ADMIN_PORT="); ok {
				if _, err := strconv.Atoi(port); err == nil {
					addrs = append(addrs, strconv.Quote("127.0.0.1:"+port))
				}
			}
		}
	}
	data := "[{\"targets\": [" + strings.Join(addrs, ",") + "]}]"
	if err := os.WriteFile(path+".tmp", []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}
