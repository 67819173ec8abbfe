package stats

import "time"

// Header names and values shared by the queue-proxy and the activator. They
// are Knative's, so a Knative activator or probe works against Ebb's
// queue-proxy unchanged.
const (
	// ProxyHeaderName marks a request forwarded by the activator. The
	// queue-proxy counts such requests a second time as "proxied", so the
	// autoscaler can subtract what the activator already reported.
	ProxyHeaderName = "K-Proxy-Request"
	// ProxyHeaderValue is the only value of ProxyHeaderName that counts.
	ProxyHeaderValue = "activator"

	// ProbeHeaderName asks the queue-proxy "are you ready" without reaching
	// the app.
	ProbeHeaderName = "K-Network-Probe"
	// ProbeHeaderValue is the value of ProbeHeaderName the queue-proxy answers;
	// a ready queue-proxy answers 200 with exactly this body.
	ProbeHeaderValue = "queue"
)

// Source says which component cut a Stat.
type Source uint8

// The sources. The zero value is invalid on the wire, so a Stat whose source
// was never set cannot be sent by mistake.
const (
	SourceQueueProxy Source = 1
	SourceActivator  Source = 2
)

// String names the source for logs.
func (s Source) String() string {
	switch s {
	case SourceQueueProxy:
		return "queue-proxy"
	case SourceActivator:
		return "activator"
	default:
		return "unknown"
	}
}

// Limits on the variable-length fields, so a Stat always fits the wire format.
const (
	// MaxPodNameLen is a Kubernetes object name's limit (DNS subdomain).
	MaxPodNameLen = 253
	// MaxRevisionLen fits "namespace/name" with both parts at their limits.
	MaxRevisionLen = 255
)

// Stat is one report of load, cut every reporting period by a queue-proxy
// (for its pod) or by an activator (for one revision it forwards to).
//
// Invariants checked on the wire: counts and averages are finite and not
// negative; the proxied part never exceeds the whole.
type Stat struct {
	// Source is the component that cut the report.
	Source Source
	// PodName is the reporting pod: the replica for a queue-proxy, the
	// activator's own pod for an activator.
	PodName string
	// Revision is the revision key ("namespace/name" on Kubernetes). A
	// queue-proxy may leave it empty (the scraper knows whom it scraped); an
	// activator must set it.
	Revision string
	// Time is when the report was cut (wall clock of the reporter). The zero
	// Time means unset: the receiver stamps it.
	Time time.Time
	// Period is the time the averages and counts cover. Zero means an event
	// rather than a window (the activator's "first request" poke); receivers
	// treat counts of such a Stat as covering one second.
	Period time.Duration
	// ProcessUptime is how long the reporter has been running.
	ProcessUptime time.Duration
	// AverageConcurrency is the time-weighted average number of requests in
	// flight over Period, queued ones included.
	AverageConcurrency float64
	// AverageProxiedConcurrency is the part of AverageConcurrency that came
	// through the activator (ProxyHeaderName).
	AverageProxiedConcurrency float64
	// RequestCount is the number of requests that arrived during Period.
	RequestCount uint64
	// ProxiedRequestCount is the part of RequestCount that came through the
	// activator.
	ProxiedRequestCount uint64
}

// RequestRate is RequestCount per second of Period (per one second when
// Period is zero).
func (s Stat) RequestRate() float64 { return perSecond(s.RequestCount, s.Period) }

// ProxiedRequestRate is ProxiedRequestCount per second of Period (per one
// second when Period is zero).
func (s Stat) ProxiedRequestRate() float64 { return perSecond(s.ProxiedRequestCount, s.Period) }

func perSecond(n uint64, period time.Duration) float64 {
	if period <= 0 {
		return float64(n)
	}
	return float64(n) / period.Seconds()
}
