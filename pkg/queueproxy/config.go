package queueproxy

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/envconfig"
	"ebb.dev/ebb/pkg/proxy/breaker"
	"ebb.dev/ebb/pkg/stats"
)

// Config is the validated, immutable configuration of one queue-proxy.
// Fields mirror their environment variables (doc.go lists them all).
type Config struct {
	ServingPort           int                 // QUEUE_SERVING_PORT
	AdminPort             int                 // QUEUE_ADMIN_PORT
	UserPort              int                 // USER_PORT
	ContainerConcurrency  int                 // CONTAINER_CONCURRENCY (0: unlimited)
	RequestTimeout        time.Duration       // REVISION_TIMEOUT_SECONDS
	ResponseStartTimeout  time.Duration       // REVISION_RESPONSE_START_TIMEOUT_SECONDS (0: RequestTimeout; see ResponseStart)
	IdleTimeout           time.Duration       // REVISION_IDLE_TIMEOUT_SECONDS (0: none)
	DrainPeriod           time.Duration       // DRAIN_PERIOD_SECONDS (0: none)
	AwaitAppExit          time.Duration       // QUEUE_AWAIT_APP_EXIT_SECONDS (0: none)
	PodName               string              // SERVING_POD
	Revision              string              // the revision's key in the stats, namespace/name, from SERVING_NAMESPACE and SERVING_REVISION
	Names                 config.KnativeNames // SERVING_NAMESPACE, SERVING_REVISION, SERVING_CONFIGURATION, SERVING_SERVICE (Knative's meanings)
	ProbePath             string              // READINESS_PROBE_PATH ("": TCP connect)
	ProbePeriod           time.Duration       // READINESS_PROBE_PERIOD_SECONDS
	ProbeTimeout          time.Duration       // READINESS_PROBE_TIMEOUT_SECONDS
	ProbeFailureThreshold int                 // READINESS_FAILURE_THRESHOLD
	LogLevel              string              // LOG_LEVEL
	BusyPoll              time.Duration       // BUSY_POLL_MICROSECONDS (0: never)
	BindAddress           string              // QUEUE_BIND_ADDRESS ("": every interface)
	HeaderTimeout         time.Duration       // QUEUE_HEADER_TIMEOUT_SECONDS
	ClientIdleTimeout     time.Duration       // QUEUE_CLIENT_IDLE_TIMEOUT_SECONDS
	ClientWriteTimeout    time.Duration       // QUEUE_CLIENT_WRITE_TIMEOUT_SECONDS
	MaxConns              int                 // QUEUE_MAX_CONNS
	AdminMaxConns         int                 // QUEUE_ADMIN_MAX_CONNS
	ProxySecret           string              // ACTIVATOR_PROXY_SECRET ("": the marker is never honoured)
	UpstreamProtocol      string              // QUEUE_UPSTREAM_PROTOCOL: config.UpstreamHTTP1 or config.UpstreamH2C
}

// responseStart is the effective response start timeout: ResponseStartTimeout,
// whose 0 means the request timeout.
func (c Config) responseStart() time.Duration {
	if c.ResponseStartTimeout == 0 {
		return c.RequestTimeout
	}
	return c.ResponseStartTimeout
}

// queueDepth is the number of requests that may wait for a slot: 10 ×
// containerConcurrency, as Knative.
func (c Config) queueDepth() int { return 10 * c.ContainerConcurrency }

// key is one row of the settings table (pkg/envconfig): its flag is the
// variable's name in lower case with dashes.
type key = envconfig.Setting[Config]

// row builds a key; set parses v into c or says which rule v breaks.
func row(env, def, doc string, set func(c *Config, v string) error) key {
	return key{Flag: flagName(env), Env: env, Default: def, Doc: doc, Secret: env == stats.ProxySecretEnv, Apply: set}
}

// maxContainerConcurrency keeps the queue (11 × C slots) within the breaker's limit.
const maxContainerConcurrency = 10000

// keys is the one table of settings; Load, the usage text and the docs test
// all read it.
var keys = []key{
	row(config.EnvQueueServingPort, strconv.Itoa(config.QueueServingPort), "port the proxy listens on for requests",
		intIn(1, 65535, func(c *Config, n int) { c.ServingPort = n })),
	row(config.EnvQueueAdminPort, strconv.Itoa(config.QueueAdminPort), "port of /stats, /metrics and /healthz",
		intIn(1, 65535, func(c *Config, n int) { c.AdminPort = n })),
	row(config.EnvUserPort, "8080", "port of the app on 127.0.0.1", intIn(1, 65535, func(c *Config, n int) { c.UserPort = n })),
	row(config.EnvContainerConcurrency, "0",
		"requests the app may serve at once (0: no limit, no breaker); 10x more may queue",
		intIn(0, maxContainerConcurrency, func(c *Config, n int) { c.ContainerConcurrency = n })),
	row(config.EnvRevisionTimeout, strconv.Itoa(int(config.DefaultRevisionTimeout/time.Second)),
		"longest a request may take, queueing included (504 after)",
		revisionTimeout(config.EnvRevisionTimeout, func(c *Config, d time.Duration) { c.RequestTimeout = d })),
	row(config.EnvResponseStartTimeout, "0",
		"longest wait for the first byte of the response, queueing included (0: the request timeout)",
		revisionTimeout(config.EnvResponseStartTimeout, func(c *Config, d time.Duration) { c.ResponseStartTimeout = d })),
	row(config.EnvIdleTimeout, "0",
		"longest silence from the app before and within the response (0: none)",
		revisionTimeout(config.EnvIdleTimeout, func(c *Config, d time.Duration) { c.IdleTimeout = d })),
	row(config.EnvDrainPeriod, "30",
		"after SIGTERM, how long to keep serving with readiness failed before refusing new connections (0: none)",
		secondsIn(0, 3600, true, func(c *Config, d time.Duration) { c.DrainPeriod = d })),
	row(config.EnvAwaitAppExit, "0",
		"after the drain, stay up (the kubelet's probe on the admin port answered) until the app stops accepting connections, at most this long "+
			"(0: exit at once; the webhook sets it: the app's preStop outlives the drain), then for the kubelet's next probe there (at most 2 s)",
		secondsIn(0, 3600, true, func(c *Config, d time.Duration) { c.AwaitAppExit = d })),
	row(config.EnvServingPod, "", "pod name in the stats (empty: the host name)", nameUpTo(stats.MaxPodNameLen, func(c *Config, s string) { c.PodName = s })),
	row(config.EnvServingNamespace, "", "the revision's namespace (Knative's; needed with SERVING_REVISION)",
		nameUpTo(stats.MaxPodNameLen, func(c *Config, s string) { c.Names.Namespace = s })),
	row(config.EnvServingRevision, "", "the revision's name, as Knative's (optional; the older form namespace/name is read too)",
		nameUpTo(stats.MaxRevisionLen, func(c *Config, s string) { c.Names.Revision = s })),
	row(config.EnvServingConfiguration, "", "the revision's Knative Configuration (empty: the revision's name)",
		nameUpTo(stats.MaxPodNameLen, func(c *Config, s string) { c.Names.Configuration = s })),
	row(config.EnvServingService, "", "the revision's Knative Service (empty: none; metrics say unknown)",
		nameUpTo(stats.MaxPodNameLen, func(c *Config, s string) { c.Names.Service = s })),
	row(config.EnvReadinessProbePath, "", "HTTP path to probe the app with GET (2xx/3xx = ready); empty: TCP connect to USER_PORT", setProbePath),
	row(config.EnvReadinessProbePeriod, "1",
		"probe period once the app has been ready (start-up probes every 50ms)",
		secondsIn(0.01, 300, false, func(c *Config, d time.Duration) { c.ProbePeriod = d })),
	row(config.EnvReadinessProbeTimeout, "1", "timeout of one probe", secondsIn(0.01, 60, false, func(c *Config, d time.Duration) { c.ProbeTimeout = d })),
	row(config.EnvReadinessFailures, "3",
		"consecutive failed probes that make a ready app not ready",
		intIn(1, 100, func(c *Config, n int) { c.ProbeFailureThreshold = n })),
	row("LOG_LEVEL", "info", "debug, info, warn or error", setLogLevel),
	row(config.EnvQueueBindAddress, "", "IP address both ports listen on (empty: every interface; the local platform sets 127.0.0.1)", setBindAddress),
	row("QUEUE_HEADER_TIMEOUT_SECONDS", "10",
		"longest time to read a request head, from a connection's accept or a keep-alive request's first byte (both "+
			"ports); a stalled client is disconnected. A request body then has REVISION_TIMEOUT_SECONDS",
		secondsIn(0.01, 600, false, func(c *Config, d time.Duration) { c.HeaderTimeout = d })),
	row("QUEUE_CLIENT_IDLE_TIMEOUT_SECONDS", "90",
		"longest wait for the next request on a keep-alive connection (longer than the activator's 30s pool idle time, "+
			"so the activator closes first)",
		secondsIn(0.01, 3600, false, func(c *Config, d time.Duration) { c.ClientIdleTimeout = d })),
	row("QUEUE_CLIENT_WRITE_TIMEOUT_SECONDS", "30",
		"longest a client may take nothing of its answer (HTTP/2: each 16 KiB of it): one that stops reading is "+
			"disconnected and its slot freed; a slow download that keeps reading is not cut (both ports' data side)",
		secondsIn(0.01, 600, false, func(c *Config, d time.Duration) { c.ClientWriteTimeout = d })),
	row("QUEUE_MAX_CONNS", "1024",
		"client connections served at once on the serving port (more get 503 at accept; each busy one costs about 26 "+
			"KiB). No per-IP cap: behind the activator or an ingress all clients share few IPs",
		intIn(1, 1<<20, func(c *Config, n int) { c.MaxConns = n })),
	row("QUEUE_ADMIN_MAX_CONNS", "64",
		"connections served at once on the admin port (more wait in the kernel's backlog)",
		intIn(1, 1<<16, func(c *Config, n int) { c.AdminMaxConns = n })),
	row(stats.ProxySecretEnv, "",
		"per-install secret that proves a K-Proxy-Request marker came from an activator (16 to 256 visible ASCII "+
			"characters); empty: the marker is never honoured and every request counts as direct",
		setProxySecret),
	row(config.EnvUpstreamProtocol, config.UpstreamHTTP1,
		"protocol to the app: http1 (each request as its client spoke it: HTTP/1.1 as HTTP/1.1, HTTP/2 as h2c) or h2c "+
			"(every request as HTTP/2 cleartext, HTTP/1.1 clients' too; upgrades such as websockets are refused). The "+
			"platforms set h2c for a container port named h2c, as Knative",
		setUpstreamProtocol),
	row("BUSY_POLL_MICROSECONDS", "100",
		"how long a socket read polls before it sleeps while the queue-proxy is nearly idle: lower latency for at most "+
			"this much CPU per read (0: never; see pkg/proxy/busypoll)",
		intIn(0, 1000, func(c *Config, n int) { c.BusyPoll = time.Duration(n) * time.Microsecond })),
}

// flagName is the command-line flag for an environment variable.
func flagName(env string) string { return strings.ReplaceAll(strings.ToLower(env), "_", "-") }

// Load reads the configuration with pkg/envconfig: a flag wins over its
// environment variable (an empty one counts as unset), which wins over the
// default. Every bad value is reported, each naming the variable, where the
// value came from, the value and the rule; then the rules across keys.
func Load(args []string, lookupEnv func(string) (string, bool)) (Config, error) {
	getenv := func(k string) string { v, _ := lookupEnv(k); return v }
	var c Config
	if err := envconfig.Load("queueproxy", keys, args, getenv, &c); err != nil {
		return Config{}, err
	}
	errs := c.crossChecks()
	if err := c.resolveNames(); err != nil {
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}

// resolveNames makes the revision's stats key and its metrics' names from
// the SERVING_* variables: Knative's SERVING_REVISION is a name, with
// SERVING_NAMESPACE beside it; Ebb's older form namespace/name is read
// too.
func (c *Config) resolveNames() error {
	n := &c.Names
	if ns, name, legacy := strings.Cut(n.Revision, "/"); legacy {
		if ns == "" || name == "" || strings.Contains(name, "/") || (n.Namespace != "" && n.Namespace != ns) {
			return fmt.Errorf("%s=%q: must be the revision's name (with %s=%q), or namespace/name naming the same namespace",
				config.EnvServingRevision, n.Revision, config.EnvServingNamespace, n.Namespace)
		}
		n.Namespace, n.Revision = ns, name
	}
	if n.Revision == "" {
		return nil
	}
	if n.Namespace == "" {
		return fmt.Errorf("%s=%q: needs %s (Knative's pair: the name and its namespace; the downward API's metadata.namespace)",
			config.EnvServingRevision, n.Revision, config.EnvServingNamespace)
	}
	if n.Configuration == "" {
		n.Configuration = n.Revision
	}
	if n.Service == "" {
		n.Service = config.UnknownName
	}
	c.Revision = n.Namespace + "/" + n.Revision
	return nil
}

// crossChecks applies the rules that involve more than one key. It replaces
// no value: a documented "0 means" is read where it is used (ResponseStart).
func (c *Config) crossChecks() []error {
	errs := config.TimeoutOrderErrors(c.RequestTimeout, c.ResponseStartTimeout, c.IdleTimeout)
	ports := map[int]string{}
	for _, p := range []struct {
		name string
		port int
	}{{config.EnvQueueServingPort, c.ServingPort}, {config.EnvQueueAdminPort, c.AdminPort}, {config.EnvUserPort, c.UserPort}} {
		if other, dup := ports[p.port]; dup {
			errs = append(errs, fmt.Errorf("%s=%d: must differ from %s", p.name, p.port, other))
		}
		ports[p.port] = p.name
	}
	if c.ContainerConcurrency*11 > breaker.MaxSlots {
		errs = append(errs, fmt.Errorf("CONTAINER_CONCURRENCY=%d: 11x must fit the breaker (%d slots)", c.ContainerConcurrency, breaker.MaxSlots))
	}
	return errs
}

// Usage writes the flag and environment reference to w.
func Usage(w io.Writer) { envconfig.Usage(w, "queueproxy", keys) }

func intIn(lo, hi int, assign func(*Config, int)) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("must be an integer within [%d, %d]", lo, hi)
		}
		assign(c, n)
		return nil
	}
}

// secondsIn parses a decimal number of seconds within [lo, hi]; zeroOK
// also admits 0 (meaning "off" or "the default", per key).
func secondsIn(lo, hi float64, zeroOK bool, assign func(*Config, time.Duration)) func(*Config, string) error {
	return func(c *Config, v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		ok := err == nil && !math.IsNaN(f) && (f >= lo && f <= hi || zeroOK && f == 0)
		if !ok {
			if zeroOK {
				return fmt.Errorf("must be 0 or a number of seconds within [%v, %v]", lo, hi)
			}
			return fmt.Errorf("must be a number of seconds within [%v, %v]", lo, hi)
		}
		assign(c, time.Duration(f*float64(time.Second)))
		return nil
	}
}

// revisionTimeout parses a revision timeout variable with its one rule
// (config.ParseTimeoutSeconds), shared with every other reader.
func revisionTimeout(env string, assign func(*Config, time.Duration)) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := config.ParseTimeoutSeconds(env, v)
		if err != nil {
			return err
		}
		assign(c, d)
		return nil
	}
}

func nameUpTo(n int, assign func(*Config, string)) func(*Config, string) error {
	return func(c *Config, v string) error {
		if len(v) > n || strings.ContainsAny(v, " \t\r\n") {
			return fmt.Errorf("must be at most %d bytes without white space", n)
		}
		assign(c, v)
		return nil
	}
}

func setProbePath(c *Config, v string) error {
	if v != "" && (!strings.HasPrefix(v, "/") || strings.ContainsAny(v, " \t\r\n")) {
		return errors.New("must be empty (TCP probe) or an absolute path such as /ready")
	}
	c.ProbePath = v
	return nil
}

func setBindAddress(c *Config, v string) error {
	if v != "" {
		if _, err := netip.ParseAddr(v); err != nil {
			return errors.New("must be empty (every interface) or an IP address such as 127.0.0.1")
		}
	}
	c.BindAddress = v
	return nil
}

func setProxySecret(c *Config, v string) error {
	if err := stats.ValidateProxySecret(v); err != nil {
		return err
	}
	c.ProxySecret = v
	return nil
}

func setUpstreamProtocol(c *Config, v string) error {
	if !slices.Contains(config.UpstreamProtocols, v) {
		return fmt.Errorf("must be one of %s", strings.Join(config.UpstreamProtocols, ", "))
	}
	c.UpstreamProtocol = v
	return nil
}

func setLogLevel(c *Config, v string) error {
	switch v {
	case "debug", "info", "warn", "error":
		c.LogLevel = v
		return nil
	}
	return errors.New("must be one of debug, info, warn, error")
}
