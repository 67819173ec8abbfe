package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap/zapcore"

	"ebb.dev/ebb/pkg/activator"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadConfigDefaults(t *testing.T) {
	c, err := loadConfig(nil, env(map[string]string{"ACTIVATOR_REVISIONS_FILE": "r.json", "POD_NAME": "act-0"}))
	if err != nil {
		t.Fatal(err)
	}
	want := &config{
		Address: ":8012", AdminAddress: ":9092", RevisionsFile: "r.json", RevisionsPoll: time.Second,
		LogLevel: zapcore.InfoLevel, MemoryLimit: 80 << 20, Platform: "file", AdminMaxConns: 64, AdminMaxConnsPerIP: 16,
		Kube: kubeConfig{Namespace: "ebb-system", ActivatorService: "ebb-activator", QueueServingPort: 8012},
		Activator: activator.Options{
			PodName:         "act-0",
			Hosts:           activator.HostRules{ClusterDomain: "cluster.local", LocalNamespace: "default"},
			Queue:           activator.QueueLimits{PerRevision: 1000, PerRevisionBytes: 16 << 20, Total: 10000, TotalBytes: 32 << 20},
			MaxBufferedBody: 64 << 10, MaxConns: 2048, ProbeInterval: 5 * time.Millisecond,
			ProbeTimeout: 300 * time.Millisecond, ConnectTimeout: 2 * time.Second, SlowRequest: 15 * time.Second,
			ClientCacheSize: 1024, MaxRetries: 2, DrainTimeout: 30 * time.Second,
			BusyPoll: 100 * time.Microsecond, HeaderTimeout: 10 * time.Second, BodyTimeout: 10 * time.Minute,
			IdleTimeout: 90 * time.Second, WriteTimeout: 30 * time.Second, ReportPeriod: time.Second,
		},
	}
	if diff := cmp.Diff(want, c, cmp.AllowUnexported(activator.Options{})); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

func TestLoadConfigPrecedence(t *testing.T) {
	c, err := loadConfig([]string{"--probe-interval", "7ms", "--revisions-file", "flag.json"},
		env(map[string]string{"ACTIVATOR_PROBE_INTERVAL": "50ms", "ACTIVATOR_REVISIONS_FILE": "env.json",
			"ACTIVATOR_LOCAL_DOMAIN": "LocalHost.", "ACTIVATOR_MAX_QUEUED_BYTES": "2Gi", "AUTOSCALER_URL": "http://a:1"}))
	if err != nil {
		t.Fatal(err)
	}
	got := []any{c.Activator.ProbeInterval, c.RevisionsFile, c.Activator.Hosts.LocalDomain, c.Activator.Queue.TotalBytes, c.AutoscalerURL}
	want := []any{7 * time.Millisecond, "flag.json", "localhost", int64(2 << 30), "http://a:1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("flag over env over default (-want +got):\n%s", diff)
	}
}

// TestLoadConfigErrors: all problems at once, each naming the variable,
// where the value came from, the value and the rule.
func TestLoadConfigErrors(t *testing.T) {
	_, err := loadConfig([]string{"--max-retries", "11"}, env(map[string]string{
		"ACTIVATOR_PROBE_INTERVAL": "1s", "ACTIVATOR_MAX_QUEUED": "-3", "ACTIVATOR_MAX_QUEUED_BYTES": "lots",
		"ACTIVATOR_LOCAL_NAMESPACE": "Default", "ACTIVATOR_LOG_LEVEL": "loud", "ACTIVATOR_CLUSTER_DOMAIN": "a..b_c",
	}))
	if err == nil {
		t.Fatal("loadConfig succeeded")
	}
	want := []string{
		`environment variable "ACTIVATOR_REVISIONS_FILE" = "" (default): must be set`,
		`environment variable "ACTIVATOR_PROBE_INTERVAL" = "1s": must be a duration within [1ms, 200ms]`,
		`environment variable "ACTIVATOR_MAX_QUEUED" = "-3": must be a whole number within [1, 1048576]`,
		`environment variable "ACTIVATOR_MAX_QUEUED_BYTES" = "lots": must be a byte count`,
		`environment variable "ACTIVATOR_LOCAL_NAMESPACE" = "Default": must be a DNS label`,
		`environment variable "ACTIVATOR_LOG_LEVEL" = "loud": must be debug, info, warn or error`,
		`environment variable "ACTIVATOR_CLUSTER_DOMAIN" = "a..b_c": must be a DNS name`,
		`flag "--max-retries" = "11": must be a whole number within [0, 10]`,
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("errors do not include %q:\n%v", w, err)
		}
	}
	if got := strings.Count(err.Error(), "\n") + 1; got != len(want) {
		t.Errorf("%d errors, want %d:\n%v", got, len(want), err)
	}
}

// TestLoadConfigEdges: the settings of who may be routed where and of the
// client deadlines; a bad secret is reported without its value.
func TestLoadConfigEdges(t *testing.T) {
	base := map[string]string{"ACTIVATOR_REVISIONS_FILE": "r.json"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	c, err := loadConfig([]string{"--revision-header", "true"}, env(with(
		"ACTIVATOR_NAMESPACES", "apps, default", "ACTIVATOR_PROXY_SECRET", "0123456789abcdef",
		"ACTIVATOR_HEADER_TIMEOUT", "2s", "ACTIVATOR_ADMIN_MAX_CONNS_PER_IP", "0")))
	if err != nil {
		t.Fatal(err)
	}
	got := []any{c.Activator.Namespaces, c.Activator.RevisionHeader, c.Activator.ProxySecret, c.Activator.HeaderTimeout, c.AdminMaxConnsPerIP}
	want := []any{[]string{"apps", "default"}, true, "0123456789abcdef", 2 * time.Second, 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("edge settings (-want +got):\n%s", diff)
	}

	const badSecret = "short secret"
	_, err = loadConfig(nil, env(with("ACTIVATOR_NAMESPACES", "apps,Bad_NS", "ACTIVATOR_PROXY_SECRET", badSecret,
		"ACTIVATOR_REVISION_HEADER", "yes please")))
	if err == nil {
		t.Fatal("loadConfig accepted bad values")
	}
	for _, w := range []string{
		`environment variable "ACTIVATOR_NAMESPACES" = "apps,Bad_NS": namespace "Bad_NS" must be a DNS label`,
		`environment variable "ACTIVATOR_PROXY_SECRET" = "(redacted)": a proxy secret must be 16 to 256`,
		`environment variable "ACTIVATOR_REVISION_HEADER" = "yes please": must be true or false`,
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("errors do not include %q:\n%v", w, err)
		}
	}
	if strings.Contains(err.Error(), badSecret) {
		t.Errorf("the error shows the secret:\n%v", err)
	}
}

// TestLoadConfigZero: a 0 the table allows reaches the activator as 0 (no
// retry, no drain wait); a 0 it does not allow is refused with its rule.
func TestLoadConfigZero(t *testing.T) {
	base := env(map[string]string{"ACTIVATOR_REVISIONS_FILE": "r.json"})
	c, err := loadConfig([]string{"--max-retries", "0", "--drain-timeout", "0s"}, base)
	if err != nil {
		t.Fatal(err)
	}
	if c.Activator.MaxRetries != 0 || c.Activator.DrainTimeout != 0 {
		t.Errorf("max retries %d, drain timeout %v: want 0 and 0s as given", c.Activator.MaxRetries, c.Activator.DrainTimeout)
	}
	_, err = loadConfig([]string{"--max-buffered-body", "0", "--max-conns", "0"}, base)
	for _, w := range []string{
		`flag "--max-buffered-body" = "0": must be a byte count within [1, 67108864]`,
		`flag "--max-conns" = "0": must be a whole number within [1, 1048576]`,
	} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("loadConfig: %v; want %q", err, w)
		}
	}
}

// TestDefaultsAreTheTable: activator.DefaultOptions is what the binary
// loads with no flag and no variable (one default per setting).
func TestDefaultsAreTheTable(t *testing.T) {
	c, err := loadConfig(nil, env(map[string]string{"ACTIVATOR_REVISIONS_FILE": "r.json", "POD_NAME": "act-0"}))
	if err != nil {
		t.Fatal(err)
	}
	want := activator.DefaultOptions()
	want.PodName = "act-0" // the binary's own row
	if diff := cmp.Diff(want, c.Activator, cmp.AllowUnexported(activator.Options{})); diff != "" {
		t.Errorf("binary defaults vs DefaultOptions (-want +got):\n%s", diff)
	}
}
