package main

import (
	"errors"
	"os"
	"strconv"
	"time"

	"go.uber.org/zap/zapcore"

	"ebb.dev/ebb/pkg/activator"
	ebbconfig "ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/envconfig"
	"ebb.dev/ebb/pkg/stats"
)

// config is the activator binary's validated configuration.
type config struct {
	Address, AdminAddress string
	RevisionsFile         string
	RevisionsPoll         time.Duration
	AutoscalerURL         string
	StatsTokenFile        string
	ProxySecretFile       string // the install's proxy secret, re-read (proxysecret.go)
	MemoryLimit           int64  // bytes; 0: none
	AdminMaxConns         int    // connections served at once on the admin port
	AdminMaxConnsPerIP    int    // per client address (0: no per-IP cap)
	LogLevel              zapcore.Level
	Activator             activator.Options // the settings part; cmd adds the wiring
	Platform              string            // platformFile or platformKubernetes
	Kube                  kubeConfig
}

// setting is one row of the binary's table: its own rows (listeners,
// platform, stats, logs) and the activator's (activator.Settings).
type setting = envconfig.Setting[config]

func settings() []setting {
	table := []setting{
		{Flag: "address", Env: "ACTIVATOR_ADDRESS", Default: ":" + strconv.Itoa(ebbconfig.ActivatorPort), Doc: "host:port the proxy listens on",
			Apply: envconfig.String(func(c *config) *string { return &c.Address })},
		{Flag: "admin-address", Env: "ACTIVATOR_ADMIN_ADDRESS", Default: ":" + strconv.Itoa(ebbconfig.ActivatorAdminPort),
			Doc:   "host:port of /healthz, /readyz and /metrics",
			Apply: envconfig.String(func(c *config) *string { return &c.AdminAddress })},
		platformSetting(),
		{Flag: "revisions-file", Env: "ACTIVATOR_REVISIONS_FILE", Default: "",
			Doc: "JSON file of revisions and replicas (required with the file platform; re-read on change and on SIGHUP)", Apply: revisionsFile},
		{Flag: "revisions-poll", Env: "ACTIVATOR_REVISIONS_POLL", Default: "1s", Doc: "how often the revisions file is checked for changes",
			Apply: envconfig.Duration(10*time.Millisecond, time.Hour, func(c *config) *time.Duration { return &c.RevisionsPoll })},
		{Flag: "autoscaler-url", Env: ebbconfig.EnvAutoscalerURL, Default: "",
			Doc: "base URL of the autoscaler; stats go to " +
				"URL" + stats.BatchPath + " (empty: not reported). With the kubernetes platform it is not used: each revision's " +
				"stats go to the autoscaler replica holding its bucket, from their Leases",
			Apply: envconfig.String(func(c *config) *string { return &c.AutoscalerURL })},
		{Flag: "stats-token-file", Env: ebbconfig.EnvStatsTokenFile, Default: "",
			Doc: "file of the token sent with the stats (Authorization: Bearer), re-read every minute: on Kubernetes the " +
				"projected ServiceAccount token with the ebb-autoscaler audience, locally the file `autoscaler run --stats-token-file` " +
				"writes (empty: none; the autoscaler answers 401)",
			Apply: envconfig.String(func(c *config) *string { return &c.StatsTokenFile })},
		{Flag: "proxy-secret-file", Env: stats.ProxySecretEnv + "_FILE", Default: "",
			Doc: "file holding the install's proxy secret (instead of " + stats.ProxySecretEnv + "), read at start and every " +
				proxySecretPoll.String() + " after: on Kubernetes the Secret " + stats.ProxySecretName + " mounted as a volume",
			Apply: envconfig.String(func(c *config) *string { return &c.ProxySecretFile })},
		{Flag: "pod-name", Env: ebbconfig.EnvPodName, Default: "", Doc: "this activator's name in its reports (default: the host name)", Apply: podName},
	}
	for _, s := range activator.Settings() {
		table = append(table, envconfig.Within(s, func(c *config) *activator.Options { return &c.Activator }))
	}
	table = append(table,
		setting{Flag: "admin-max-conns", Env: "ACTIVATOR_ADMIN_MAX_CONNS", Default: "64", Doc: "connections served at once on the admin port (more get 503)",
			Apply: envconfig.Int(1, 1<<16, func(c *config) *int { return &c.AdminMaxConns })},
		setting{Flag: "admin-max-conns-per-ip", Env: "ACTIVATOR_ADMIN_MAX_CONNS_PER_IP", Default: "16",
			Doc:   "admin connections per client address, IPv4 or IPv6, so one client cannot take the probes' place (more get 429; 0: no cap)",
			Apply: envconfig.Int(0, 1<<16, func(c *config) *int { return &c.AdminMaxConnsPerIP })},
		setting{Flag: "memory-limit", Env: "ACTIVATOR_MEMORY_LIMIT", Default: "80Mi",
			Doc: "Go soft memory limit (the GC works harder near it; 0: none; GOMEMLIMIT, if set, " +
				"wins)",
			Apply: envconfig.Bytes(0, 1<<40, func(c *config) *int64 { return &c.MemoryLimit })},
		setting{Flag: "log-level", Env: "ACTIVATOR_LOG_LEVEL", Default: "info", Doc: "debug, info, warn or error", Apply: logLevel},
	)
	return append(table, kubeSettings()...)
}

// loadConfig reads the flags, then the environment, then the defaults, in
// that order of precedence. Every problem comes back at once.
func loadConfig(args []string, getenv func(string) string) (*config, error) {
	c := &config{Activator: activator.DefaultOptions()} // ReportPeriod has no row; the table sets the rest
	if err := envconfig.Load("activator", settings(), args, getenv, c); err != nil {
		return nil, err
	}
	return c, nil
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
