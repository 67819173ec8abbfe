package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"

	"ebb.dev/ebb/pkg/activator"
)

// config is the activator binary's validated configuration.
type config struct {
	Address, AdminAddress string
	RevisionsFile         string
	RevisionsPoll         time.Duration
	AutoscalerURL         string
	MemoryLimit           int64 // bytes; 0: none
	LogLevel              zapcore.Level
	Activator             activator.Options // the settings part; cmd adds the wiring
	Platform              string            // platformFile or platformKubernetes
	Kube                  kubeConfig
}

// setting is one row of the configuration table: a flag, its environment
// variable, its default, and a parser that applies the value or returns
// the rule it breaks.
type setting struct {
	flag, env, def, doc string
	apply               func(c *config, v string) error
}

func settings() []setting {
	return append([]setting{
		{"address", "ACTIVATOR_ADDRESS", ":8012", "host:port the proxy listens on", str(func(c *config) *string { return &c.Address })},
		{"admin-address", "ACTIVATOR_ADMIN_ADDRESS", ":9092", "host:port of /healthz, /readyz and /metrics", str(func(c *config) *string { return &c.AdminAddress })},
		platformSetting(),
		{"revisions-file", "ACTIVATOR_REVISIONS_FILE", "", "JSON file of revisions and replicas (required with the file platform; re-read on change and on SIGHUP)",
			revisionsFile},
		{"revisions-poll", "ACTIVATOR_REVISIONS_POLL", "1s", "how often the revisions file is checked for changes",
			dur(10*time.Millisecond, time.Hour, func(c *config) *time.Duration { return &c.RevisionsPoll })},
		{"autoscaler-url", "AUTOSCALER_URL", "", "base URL of the autoscaler; stats go to URL/v1/stats (empty: not reported)",
			str(func(c *config) *string { return &c.AutoscalerURL })},
		{"pod-name", "POD_NAME", "", "this activator's name in its reports (default: the host name)", podName},
		{"cluster-domain", "ACTIVATOR_CLUSTER_DOMAIN", "cluster.local", "routes NAME.NAMESPACE.svc.DOMAIN",
			domain(func(c *config) *string { return &c.Activator.Hosts.ClusterDomain })},
		{"local-domain", "ACTIVATOR_LOCAL_DOMAIN", "", "routes NAME.DOMAIN to the local namespace, e.g. localhost (empty: off)",
			domain(func(c *config) *string { return &c.Activator.Hosts.LocalDomain })},
		{"local-namespace", "ACTIVATOR_LOCAL_NAMESPACE", "default", "namespace of NAME.LOCAL-DOMAIN hosts",
			label(func(c *config) *string { return &c.Activator.Hosts.LocalNamespace })},
		{"queue-timeout", "ACTIVATOR_QUEUE_TIMEOUT", "0s", "longest wait for a replica (0: the revision's request timeout)",
			dur(0, time.Hour, func(c *config) *time.Duration { return &c.Activator.QueueTimeout })},
		{"max-queued-per-revision", "ACTIVATOR_MAX_QUEUED_PER_REVISION", "1000", "requests waiting per revision",
			count(1, 1<<20, func(c *config) *int64 { return &c.Activator.Queue.PerRevision })},
		{"max-queued-bytes-per-revision", "ACTIVATOR_MAX_QUEUED_BYTES_PER_REVISION", "16Mi", "bytes held by waiting requests per revision",
			size(64<<10, 1<<40, func(c *config) *int64 { return &c.Activator.Queue.PerRevisionBytes })},
		{"max-queued", "ACTIVATOR_MAX_QUEUED", "10000", "requests waiting in all", count(1, 1<<20, func(c *config) *int64 { return &c.Activator.Queue.Total })},
		{"max-queued-bytes", "ACTIVATOR_MAX_QUEUED_BYTES", "32Mi", "bytes held by waiting requests in all",
			size(64<<10, 1<<40, func(c *config) *int64 { return &c.Activator.Queue.TotalBytes })},
		{"max-buffered-body", "ACTIVATOR_MAX_BUFFERED_BODY", "64Ki", "largest request body buffered (and retryable); larger ones stream",
			intSize(0, 64<<20, func(c *config) *int { return &c.Activator.MaxBufferedBody })},
		{"max-conns", "ACTIVATOR_MAX_CONNS", "2048", "client connections served at once (each busy one costs about 26 KiB)",
			intCount(1, 1<<20, func(c *config) *int { return &c.Activator.MaxConns })},
		{"probe-interval", "ACTIVATOR_PROBE_INTERVAL", "10ms", "period of the probes of a replica not ready yet",
			dur(time.Millisecond, 200*time.Millisecond, func(c *config) *time.Duration { return &c.Activator.ProbeInterval })},
		{"probe-timeout", "ACTIVATOR_PROBE_TIMEOUT", "300ms", "timeout of one probe",
			dur(10*time.Millisecond, 10*time.Second, func(c *config) *time.Duration { return &c.Activator.ProbeTimeout })},
		{"client-cache-size", "ACTIVATOR_CLIENT_CACHE_SIZE", "1024", "per-replica HTTP clients kept (LRU)",
			intCount(1, 1<<20, func(c *config) *int { return &c.Activator.ClientCacheSize })},
		{"max-retries", "ACTIVATOR_MAX_RETRIES", "2", "resends to another replica after a connection error",
			intCount(0, 10, func(c *config) *int { return &c.Activator.MaxRetries })},
		{
			"busy-poll",
			"ACTIVATOR_BUSY_POLL",
			"100us",
			"how long a socket read polls before it sleeps while the activator is nearly idle (lower latency for a few CPU microseconds; 0: never)",
			dur(0, time.Millisecond, func(c *config) *time.Duration { return &c.Activator.BusyPoll }),
		},
		{"shutdown-delay", "ACTIVATOR_SHUTDOWN_DELAY", "0s", "wait between failing readiness and closing the listener",
			dur(0, 5*time.Minute, func(c *config) *time.Duration { return &c.Activator.ShutdownDelay })},
		{"drain-timeout", "ACTIVATOR_DRAIN_TIMEOUT", "30s", "longest wait for queued and in-flight requests and open websocket tunnels at shutdown",
			dur(0, time.Hour, func(c *config) *time.Duration { return &c.Activator.DrainTimeout })},
		{"memory-limit", "ACTIVATOR_MEMORY_LIMIT", "80Mi", "Go soft memory limit (the GC works harder near it; 0: none; GOMEMLIMIT, if set, wins)",
			size(0, 1<<40, func(c *config) *int64 { return &c.MemoryLimit })},
		{"log-level", "ACTIVATOR_LOG_LEVEL", "info", "debug, info, warn or error", logLevel},
	}, kubeSettings()...)
}

// loadConfig reads the flags, then the environment, then the defaults, in
// that order of precedence. Every problem comes back at once.
func loadConfig(args []string, getenv func(string) string) (*config, error) {
	table := settings()
	fs := flag.NewFlagSet("activator", flag.ContinueOnError)
	given := map[string]*string{}
	for _, s := range table {
		given[s.flag] = fs.String(s.flag, "", fmt.Sprintf("%s (env %s, default %q)", s.doc, s.env, s.def))
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	c := &config{}
	var errs []error
	for _, s := range table {
		v, from := s.def, "default"
		if e := getenv(s.env); e != "" {
			v, from = e, s.env
		}
		if set[s.flag] {
			v, from = *given[s.flag], "--"+s.flag
		}
		if err := s.apply(c, v); err != nil {
			errs = append(errs, fmt.Errorf("%s (%s) = %q: %w", s.env, from, v, err))
		}
	}
	return c, errors.Join(errs...)
}

func str(field func(*config) *string) func(*config, string) error {
	return func(c *config, v string) error { *field(c) = v; return nil }
}

func required(field func(*config) *string) func(*config, string) error {
	return func(c *config, v string) error {
		if v == "" {
			return errors.New("must be set")
		}
		*field(c) = v
		return nil
	}
}

func dur(lo, hi time.Duration, field func(*config) *time.Duration) func(*config, string) error {
	return func(c *config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < lo || d > hi {
			return fmt.Errorf("must be a duration within [%v, %v]", lo, hi)
		}
		*field(c) = d
		return nil
	}
}

func count(lo, hi int64, field func(*config) *int64) func(*config, string) error {
	return func(c *config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("must be a whole number within [%d, %d]", lo, hi)
		}
		*field(c) = n
		return nil
	}
}

func intCount(lo, hi int64, field func(*config) *int) func(*config, string) error {
	var n int64
	inner := count(lo, hi, func(*config) *int64 { return &n })
	return func(c *config, v string) error {
		if err := inner(c, v); err != nil {
			return err
		}
		*field(c) = int(n)
		return nil
	}
}

// size parses a byte count with an optional Ki, Mi or Gi suffix.
func size(lo, hi int64, field func(*config) *int64) func(*config, string) error {
	return func(c *config, v string) error {
		n, err := parseSize(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("must be a byte count within [%d, %d], optionally with a Ki, Mi or Gi suffix", lo, hi)
		}
		*field(c) = n
		return nil
	}
}

func intSize(lo, hi int64, field func(*config) *int) func(*config, string) error {
	var n int64
	inner := size(lo, hi, func(*config) *int64 { return &n })
	return func(c *config, v string) error {
		if err := inner(c, v); err != nil {
			return err
		}
		*field(c) = int(n)
		return nil
	}
}

func parseSize(v string) (int64, error) {
	mult := int64(1)
	for suffix, m := range map[string]int64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30} {
		if strings.HasSuffix(v, suffix) {
			v, mult = strings.TrimSuffix(v, suffix), m
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n > (1<<62)/mult {
		return 0, errors.New("not a size")
	}
	return n * mult, nil
}

func domain(field func(*config) *string) func(*config, string) error {
	return func(c *config, v string) error {
		v = strings.ToLower(strings.Trim(v, "."))
		for _, l := range strings.Split(v, ".") {
			if v != "" && !validLabel(l) {
				return errors.New("must be a DNS name such as cluster.local")
			}
		}
		*field(c) = v
		return nil
	}
}

func label(field func(*config) *string) func(*config, string) error {
	return func(c *config, v string) error {
		if !validLabel(v) {
			return errors.New("must be a DNS label: 1 to 63 of a-z, 0-9 and '-', not starting or ending with '-'")
		}
		*field(c) = v
		return nil
	}
}

func validLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, r := range s {
		if !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

func podName(c *config, v string) error {
	if v == "" {
		v, _ = os.Hostname()
	}
	if len(v) > 253 {
		return errors.New("must be at most 253 bytes")
	}
	c.Activator.PodName = v
	return nil
}

func logLevel(c *config, v string) error {
	if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil || c.LogLevel > zapcore.ErrorLevel {
		return errors.New("must be debug, info, warn or error")
	}
	return nil
}
