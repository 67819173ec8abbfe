package activator

import (
	"fmt"
	"strings"
	"time"

	"ebb.dev/ebb/pkg/envconfig"
	"ebb.dev/ebb/pkg/stats"
)

// setting is one row of the activator's settings table.
type setting = envconfig.Setting[Options]

// Settings is the table of the Options a user sets: the activator binary
// reads it from flags and environment variables (with its own rows for
// the wiring), and its defaults are the only defaults of these fields
// (DefaultOptions). docs/activator.md lists it. Each row says what 0 means
// where 0 is allowed; where it is not, its lower bound is above 0.
func Settings() []setting {
	return []setting{
		{Flag: "cluster-domain", Env: "ACTIVATOR_CLUSTER_DOMAIN", Default: "cluster.local", Doc: "routes NAME.NAMESPACE.svc.DOMAIN",
			Apply: envconfig.DNSName(false, func(o *Options) *string { return &o.Hosts.ClusterDomain })},
		{Flag: "local-domain", Env: "ACTIVATOR_LOCAL_DOMAIN", Default: "", Doc: "routes NAME.DOMAIN to the local namespace, e.g. localhost (empty: off)",
			Apply: envconfig.DNSName(true, func(o *Options) *string { return &o.Hosts.LocalDomain })},
		{Flag: "local-namespace", Env: "ACTIVATOR_LOCAL_NAMESPACE", Default: "default", Doc: "namespace of NAME.LOCAL-DOMAIN hosts",
			Apply: envconfig.DNSLabel(func(o *Options) *string { return &o.Hosts.LocalNamespace })},
		{Flag: "queue-timeout", Env: "ACTIVATOR_QUEUE_TIMEOUT", Default: "0s", Doc: "longest wait for a replica (0: the revision's request timeout)",
			Apply: envconfig.Duration(0, time.Hour, func(o *Options) *time.Duration { return &o.QueueTimeout })},
		{Flag: "max-queued-per-revision", Env: "ACTIVATOR_MAX_QUEUED_PER_REVISION", Default: "1000", Doc: "requests waiting per revision",
			Apply: envconfig.Int64(1, 1<<20, func(o *Options) *int64 { return &o.Queue.PerRevision })},
		{Flag: "max-queued-bytes-per-revision", Env: "ACTIVATOR_MAX_QUEUED_BYTES_PER_REVISION", Default: "16Mi",
			Doc: "bytes held by waiting requests per " +
				"revision",
			Apply: envconfig.Bytes(64<<10, 1<<40, func(o *Options) *int64 { return &o.Queue.PerRevisionBytes })},
		{Flag: "max-queued", Env: "ACTIVATOR_MAX_QUEUED", Default: "10000", Doc: "requests waiting in all",
			Apply: envconfig.Int64(1, 1<<20, func(o *Options) *int64 { return &o.Queue.Total })},
		{Flag: "max-queued-bytes", Env: "ACTIVATOR_MAX_QUEUED_BYTES", Default: "32Mi", Doc: "bytes held by waiting requests in all",
			Apply: envconfig.Bytes(64<<10, 1<<40, func(o *Options) *int64 { return &o.Queue.TotalBytes })},
		{Flag: "max-buffered-body", Env: "ACTIVATOR_MAX_BUFFERED_BODY", Default: "64Ki",
			Doc:   "largest request body buffered (and retryable); larger ones stream. At least 1 (to resend no request, set max-retries to 0)",
			Apply: envconfig.IntBytes(1, 64<<20, func(o *Options) *int { return &o.MaxBufferedBody })},
		{Flag: "max-conns", Env: "ACTIVATOR_MAX_CONNS", Default: "2048", Doc: "client connections served at once (each busy one costs about 26 KiB)",
			Apply: envconfig.Int(1, 1<<20, func(o *Options) *int { return &o.MaxConns })},
		{Flag: "header-timeout", Env: "ACTIVATOR_HEADER_TIMEOUT", Default: "10s",
			Doc: "longest read of a request head, from a connection's accept or a keep-alive request's " +
				"first byte (both ports); a stalled client is disconnected",
			Apply: envconfig.Duration(10*time.Millisecond, 10*time.Minute, func(o *Options) *time.Duration { return &o.HeaderTimeout })},
		{Flag: "body-timeout", Env: "ACTIVATOR_BODY_TIMEOUT", Default: "10m",
			Doc: "longest read of a request body, from the end of its head, queueing included (raise it " +
				"with revisions whose timeout is longer; websockets have none)",
			Apply: envconfig.Duration(time.Second, 24*time.Hour, func(o *Options) *time.Duration { return &o.BodyTimeout })},
		{Flag: "idle-timeout", Env: "ACTIVATOR_IDLE_TIMEOUT", Default: "90s",
			Doc:   "longest wait for the next request on a keep-alive client connection (both ports)",
			Apply: envconfig.Duration(10*time.Millisecond, time.Hour, func(o *Options) *time.Duration { return &o.IdleTimeout })},
		{Flag: "write-timeout", Env: "ACTIVATOR_WRITE_TIMEOUT", Default: "30s",
			Doc: "longest a client may take nothing of its answer (HTTP/2: each 16 KiB of it); one that stops " +
				"reading is disconnected and its replica slot freed, a slow download that keeps reading is not cut",
			Apply: envconfig.Duration(10*time.Millisecond, 10*time.Minute, func(o *Options) *time.Duration { return &o.WriteTimeout })},
		{Flag: "proxy-secret", Env: stats.ProxySecretEnv, Default: "", Secret: true,
			Doc: "the install's secret: a request to a revision of namespace NS carries K-Proxy-Request: activator " +
				"HMAC-SHA256(secret, NS's context), which only NS's queue-proxies hold (docs/kubernetes.md, The proxy secret; empty: " +
				"queue-proxies count these requests as direct)",
			Apply: proxySecret},
		{Flag: "namespaces", Env: "ACTIVATOR_NAMESPACES", Default: "", Doc: "comma-separated namespaces served; requests for others get 404 (empty: all)",
			Apply: namespaces},
		{Flag: "revision-header", Env: "ACTIVATOR_REVISION_HEADER", Default: "false",
			Doc: "honour the Ebb-Revision: namespace/name header, which picks a revision whatever the Host " +
				"(it bypasses an ingress that routes by Host: tests and tools only)",
			Apply: envconfig.Bool(func(o *Options) *bool { return &o.RevisionHeader })},
		{Flag: "probe-interval", Env: "ACTIVATOR_PROBE_INTERVAL", Default: "5ms", Doc: "period of the probes of a replica not ready yet",
			Apply: envconfig.Duration(time.Millisecond, 200*time.Millisecond, func(o *Options) *time.Duration { return &o.ProbeInterval })},
		{Flag: "probe-timeout", Env: "ACTIVATOR_PROBE_TIMEOUT", Default: "300ms", Doc: "timeout of one probe",
			Apply: envconfig.Duration(10*time.Millisecond, 10*time.Second, func(o *Options) *time.Duration { return &o.ProbeTimeout })},
		{Flag: "connect-timeout", Env: "ACTIVATOR_CONNECT_TIMEOUT", Default: "2s",
			Doc: "longest TCP connect to a replica; one that times out sent nothing, so the request goes to another " +
				"replica or waits for one, and the replica is probed again",
			Apply: envconfig.Duration(10*time.Millisecond, time.Minute, func(o *Options) *time.Duration { return &o.ConnectTimeout })},
		{Flag: "slow-request", Env: "ACTIVATOR_SLOW_REQUEST", Default: "15s",
			Doc: "a request (a websocket excepted) that takes at least this long is logged at warn with the stage its time " +
				"went to and counted in ebb_activator_slow_requests_total (0: never)",
			Apply: envconfig.Duration(0, 24*time.Hour, func(o *Options) *time.Duration { return &o.SlowRequest })},
		{Flag: "client-cache-size", Env: "ACTIVATOR_CLIENT_CACHE_SIZE", Default: "1024", Doc: "per-replica HTTP clients kept (LRU)",
			Apply: envconfig.Int(1, 1<<20, func(o *Options) *int { return &o.ClientCacheSize })},
		{Flag: "max-retries", Env: "ACTIVATOR_MAX_RETRIES", Default: "2",
			Doc: "resends to another replica after a connection error (0: none, a connection error is a " +
				"502)",
			Apply: envconfig.Int(0, 10, func(o *Options) *int { return &o.MaxRetries })},
		{Flag: "busy-poll", Env: "ACTIVATOR_BUSY_POLL", Default: "100us",
			Doc:   "how long a socket read polls before it sleeps while the activator is nearly idle (lower latency for a few CPU microseconds; 0: never)",
			Apply: envconfig.Duration(0, time.Millisecond, func(o *Options) *time.Duration { return &o.BusyPoll })},
		{Flag: "shutdown-delay", Env: "ACTIVATOR_SHUTDOWN_DELAY", Default: "0s", Doc: "wait between failing readiness and closing the listener (0: none)",
			Apply: envconfig.Duration(0, 5*time.Minute, func(o *Options) *time.Duration { return &o.ShutdownDelay })},
		{Flag: "drain-timeout", Env: "ACTIVATOR_DRAIN_TIMEOUT", Default: "30s",
			Doc: "longest wait for queued and in-flight requests and open websocket tunnels at shutdown (0: " +
				"none: queued requests fail and tunnels close at once)",
			Apply: envconfig.Duration(0, time.Hour, func(o *Options) *time.Duration { return &o.DrainTimeout })},
	}
}

// defaultReportPeriod is the period of the load reports (Options.ReportPeriod
// has no row: the autoscaler's windows assume it).
const defaultReportPeriod = time.Second

// DefaultOptions returns the Options of the table's defaults (Settings),
// with ReportPeriod DefaultReportPeriod; the caller adds the wiring
// (Listener, Platform, Stats, Logger...). New does not default anything:
// a zero setting means what its field says, or New refuses it.
func DefaultOptions() Options {
	o := Options{ReportPeriod: defaultReportPeriod}
	if err := envconfig.Defaults(Settings(), &o); err != nil {
		panic("activator: a default of Settings breaks its own rule: " + err.Error())
	}
	return o
}

func proxySecret(o *Options, v string) error {
	if err := stats.ValidateProxySecret(v); err != nil {
		return err
	}
	o.ProxySecret = v
	return nil
}

func namespaces(o *Options, v string) error {
	o.Namespaces = nil
	if v == "" {
		return nil
	}
	for _, ns := range strings.Split(v, ",") {
		ns = strings.TrimSpace(ns)
		if !envconfig.ValidLabel(ns) {
			return fmt.Errorf("namespace %q must be a DNS label; the list is comma-separated", ns)
		}
		o.Namespaces = append(o.Namespaces, ns)
	}
	return nil
}
