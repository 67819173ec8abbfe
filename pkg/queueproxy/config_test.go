package queueproxy

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestLoadDefaults(t *testing.T) {
	got, err := Load(nil, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		ServingPort: 8012, AdminPort: 9090, UserPort: 8080,
		RequestTimeout: 300 * time.Second, ResponseStartTimeout: 0, // 0 kept as given: ResponseStart is the request timeout
		DrainPeriod: 30 * time.Second, ProbePeriod: time.Second, ProbeTimeout: time.Second,
		ProbeFailureThreshold: 3, LogLevel: "info", BusyPoll: 100 * time.Microsecond,
		HeaderTimeout: 10 * time.Second, ClientIdleTimeout: 90 * time.Second, ClientWriteTimeout: 30 * time.Second, MaxConns: 1024, AdminMaxConns: 64,
		UpstreamProtocol: "http1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		check   func(Config) any
		want    any
		wantErr []string // substrings, all present
	}{
		{name: "env", env: map[string]string{"CONTAINER_CONCURRENCY": "10", "REVISION_TIMEOUT_SECONDS": "0.5", "USER_PORT": "3000"},
			check: func(c Config) any {
				return []any{c.ContainerConcurrency, c.queueDepth(), c.RequestTimeout, c.responseStart(), c.UserPort}
			},
			want: []any{10, 100, 500 * time.Millisecond, 500 * time.Millisecond, 3000}},
		{name: "flag wins over env", env: map[string]string{"USER_PORT": "3000"}, args: []string{"--user-port=4000"},
			check: func(c Config) any { return c.UserPort }, want: 4000},
		{name: "probe path and drain", env: map[string]string{"READINESS_PROBE_PATH": "/ready", "DRAIN_PERIOD_SECONDS": "0"},
			check: func(c Config) any { return []any{c.ProbePath, c.DrainPeriod} }, want: []any{"/ready", time.Duration(0)}},
		{name: "every bad value reported, naming variable, value and rule",
			env: map[string]string{"USER_PORT": "http", "CONTAINER_CONCURRENCY": "-1", "REVISION_TIMEOUT_SECONDS": "NaN", "LOG_LEVEL": "loud"},
			wantErr: []string{`environment variable "USER_PORT" = "http": must be an integer within [1, 65535]`,
				`environment variable "CONTAINER_CONCURRENCY" = "-1": must be an integer within [0, 10000]`,
				`environment variable "REVISION_TIMEOUT_SECONDS" = "NaN": must be a number of seconds`, `environment variable "LOG_LEVEL" = "loud": must be one of`}},
		{name: "upstream protocol h2c", env: map[string]string{"QUEUE_UPSTREAM_PROTOCOL": "h2c"},
			check: func(c Config) any { return c.UpstreamProtocol }, want: "h2c"},
		{name: "upstream protocol by flag", args: []string{"--queue-upstream-protocol=http1"},
			check: func(c Config) any { return c.UpstreamProtocol }, want: "http1"},
		{name: "unknown upstream protocol", env: map[string]string{"QUEUE_UPSTREAM_PROTOCOL": "http2"},
			wantErr: []string{`environment variable "QUEUE_UPSTREAM_PROTOCOL" = "http2": must be one of http1, h2c`}},
		{name: "bad flag named as a flag", args: []string{"--queue-serving-port=0"}, wantErr: []string{`flag "--queue-serving-port" = "0"`}},
		{name: "response start beyond the request timeout",
			env: map[string]string{"REVISION_TIMEOUT_SECONDS": "10", "REVISION_RESPONSE_START_TIMEOUT_SECONDS": "20"},
			wantErr: []string{`"REVISION_RESPONSE_START_TIMEOUT_SECONDS" = "20": must not exceed REVISION_TIMEOUT_SECONDS (10)`,
				"lower it, or raise REVISION_TIMEOUT_SECONDS"}},
		{name: "idle beyond the request timeout",
			env:     map[string]string{"REVISION_TIMEOUT_SECONDS": "10", "REVISION_IDLE_TIMEOUT_SECONDS": "11"},
			wantErr: []string{`"REVISION_IDLE_TIMEOUT_SECONDS" = "11": must not exceed`}},
		{name: "same port twice", env: map[string]string{"USER_PORT": "8012"}, wantErr: []string{"USER_PORT=8012: must differ from QUEUE_SERVING_PORT"}},
		{name: "relative probe path", env: map[string]string{"READINESS_PROBE_PATH": "ready"}, wantErr: []string{"an absolute path"}},
		{name: "stray argument", args: []string{"extra"}, wantErr: []string{`unexpected argument "extra"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(tt.args, envOf(tt.env))
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatal("Load: nil error")
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, tt.check(c)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestDocsListEveryKey: doc.go and docs/queueproxy.md document every
// variable and flag of the key table.
func TestDocsListEveryKey(t *testing.T) {
	for _, path := range []string{"doc.go", "../../docs/queueproxy.md"} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			for _, name := range []string{k.Env, "--" + k.Flag} {
				if !strings.Contains(string(b), name) {
					t.Errorf("%s does not mention %s", path, name)
				}
			}
		}
	}
}

// FuzzLoad: any values never panic, and an accepted configuration keeps
// the invariants the proxy relies on.
func FuzzLoad(f *testing.F) {
	f.Add("10", "300", "0", "0.5", "/ready")
	f.Add("-1", "NaN", "1e308", "Inf", "x")
	f.Fuzz(func(t *testing.T, cc, timeout, start, idle, path string) {
		env := map[string]string{"CONTAINER_CONCURRENCY": cc, "REVISION_TIMEOUT_SECONDS": timeout,
			"REVISION_RESPONSE_START_TIMEOUT_SECONDS": start, "REVISION_IDLE_TIMEOUT_SECONDS": idle, "READINESS_PROBE_PATH": path}
		c, err := Load(nil, envOf(env))
		if err != nil {
			return
		}
		switch {
		case c.RequestTimeout <= 0 || c.responseStart() <= 0 || c.responseStart() > c.RequestTimeout:
			t.Fatalf("timeouts %v %v accepted", c.RequestTimeout, c.responseStart())
		case c.IdleTimeout < 0 || c.IdleTimeout > c.RequestTimeout:
			t.Fatalf("idle timeout %v accepted", c.IdleTimeout)
		case c.ContainerConcurrency < 0 || c.ContainerConcurrency > maxContainerConcurrency:
			t.Fatalf("concurrency %d accepted", c.ContainerConcurrency)
		case c.ProbePath != "" && c.ProbePath[0] != '/':
			t.Fatalf("probe path %q accepted", c.ProbePath)
		}
	})
}
