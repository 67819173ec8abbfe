package local

import (
	"os"
	"path/filepath"
	"time"

	"ebb.dev/ebb/pkg/platform"
)

// Options configure a Platform. The embedded platform.Options's Listener
// hears of manifest changes; its errors (an invalid ConfigMap or
// annotation) are logged.
type Options struct {
	platform.Options
	// Paths are manifest files, or directories whose *.yaml, *.yml and
	// *.json files are read.
	Paths []string
	// QueueProxy is the queue-proxy binary.
	QueueProxy string
	// WorkDir is where app commands run when their container sets no
	// workingDir (default: the current directory).
	WorkDir string
	// LogDir receives one log file per process (default: a directory under
	// the system's temporary directory).
	LogDir string

	// PollInterval is how often the manifests are checked (default 1s).
	PollInterval time.Duration
	// ProbeInterval is the readiness probe period of a starting replica
	// (default 50ms); a ready one is probed every ReadyProbeInterval
	// (default 500ms).
	ProbeInterval, ReadyProbeInterval time.Duration
	// DrainPeriod is the queue-proxy's DRAIN_PERIOD_SECONDS for local
	// replicas (default 1s: locally nothing needs long to notice).
	DrainPeriod time.Duration
	// StopTimeout bounds a replica's stop before SIGKILL (default 35s).
	StopTimeout time.Duration
	// MaxBackoff bounds the wait before replacing a crashed replica
	// (default 30s; the first wait is 1s).
	MaxBackoff time.Duration
	// ProxySecret is the install's proxy secret: each queue-proxy gets its
	// namespace's (ACTIVATOR_PROXY_SECRET, stats.NamespaceProxySecret), so
	// it honours the activator's proxied-request marker; give the
	// activator this one (Platform.ProxySecret). Default: a random secret
	// made by New, one per run.
	ProxySecret string
}

func (o *Options) setDefaults() {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.PollInterval, time.Second)
	def(&o.ProbeInterval, 50*time.Millisecond)
	def(&o.ReadyProbeInterval, 500*time.Millisecond)
	def(&o.DrainPeriod, time.Second)
	def(&o.StopTimeout, 35*time.Second)
	def(&o.MaxBackoff, 30*time.Second)
	o.Options.SetDefaults()
	if o.WorkDir == "" {
		o.WorkDir, _ = os.Getwd()
	}
	if o.LogDir == "" {
		o.LogDir = filepath.Join(os.TempDir(), "ebb-local-logs")
	}
}
