package activator

import (
	"ebb.dev/ebb/pkg/proxy/proxycore"

	"context"
	"fmt"
	"time"

	"ebb.dev/ebb/pkg/podfailure"
	"ebb.dev/ebb/pkg/stats"
)

// Platform is what the activator needs from the platform (the local
// platform, Kubernetes, or a file in tests): the revisions it may serve,
// their settings, and the addresses of their replicas' queue-proxies.
//
// It is declared here, where it is used; implementations live with the
// platforms and are wired in cmd/activator.
type Platform interface {
	// Watch calls apply with the complete list of revisions at start and
	// again after every change, until ctx ends; then it returns nil. It
	// returns an error only when it cannot go on. Calls to apply come from
	// one goroutine at a time; apply does not keep the slice or anything
	// it points to.
	Watch(ctx context.Context, apply func([]Revision)) error
}

// Revision is one revision as the platform describes it.
type Revision struct {
	Namespace string
	Name      string
	// Labels are the revision's pod labels, read for its Knative names
	// (config.NamesOf) when it first appears; nil: none.
	Labels map[string]string
	// ContainerConcurrency is the hard per-replica limit; 0 is unlimited.
	ContainerConcurrency int
	// Timeout is the revision's request timeout (Knative's timeoutSeconds);
	// it bounds a request from arrival to the end of its response.
	Timeout time.Duration
	// QueueTimeout bounds the time a request waits for a replica. Zero
	// means the activator's default (Options.QueueTimeout, else Timeout).
	QueueTimeout time.Duration
	// LoadBalancing is the policy picking a replica; LBAuto applies
	// Knative's rule. Platforms read it with ParseLoadBalancing from the
	// config.AnnotationLoadBalancing annotation.
	LoadBalancing LoadBalancing
	// Activators is the number of activators serving this revision
	// (this one included); each takes 1/Activators of every replica's
	// capacity. 0 counts as 1.
	Activators int
	// ActivatorIndex is this activator's 1-based position among the
	// Activators (sorted by address, as Knative sorts them); 0 when the
	// platform does not know it (this activator is not in the list yet).
	// With a known position and a limited ContainerConcurrency the
	// activators split the replicas between them instead of sharing
	// every replica's capacity (Knative's subsetting).
	ActivatorIndex int
	// Replicas are the revision's replicas the platform knows about.
	Replicas []Replica
	// Failure, when not nil, says that the revision's pods cannot start
	// (podfailure.Classify): while it has no usable replica, the requests
	// it holds and new ones are answered 503 at once, with its message,
	// instead of waiting for the queue timeout. nil: its pods start, or
	// none is asked for.
	Failure *podfailure.Failure
}

// Key returns the revision key, "namespace/name".
func (r *Revision) Key() string { return r.Namespace + "/" + r.Name }

// validate checks what the activator relies on.
func (r *Revision) validate() error {
	switch {
	case !validLabel([]byte(r.Namespace)) || !validLabel([]byte(r.Name)):
		return fmt.Errorf("revision %q/%q: namespace and name must be DNS labels", r.Namespace, r.Name)
	case r.ContainerConcurrency < 0:
		return fmt.Errorf("revision %s: container concurrency %d must not be negative", r.Key(), r.ContainerConcurrency)
	case r.Timeout <= 0:
		return fmt.Errorf("revision %s: timeout %v must be positive", r.Key(), r.Timeout)
	case r.QueueTimeout < 0:
		return fmt.Errorf("revision %s: queue timeout %v must not be negative", r.Key(), r.QueueTimeout)
	case r.Activators < 0:
		return fmt.Errorf("revision %s: activators %d must not be negative", r.Key(), r.Activators)
	case r.ActivatorIndex < 0 || r.ActivatorIndex > max(r.Activators, 1):
		return fmt.Errorf("revision %s: activator index %d must be within [0, %d] (1-based position among the activators; 0: unknown)", r.Key(), r.ActivatorIndex,
			max(r.Activators, 1))
	}
	return nil
}

// Replica is one replica of a revision: the address of its queue-proxy.
type Replica struct {
	// Address is host:port of the replica's queue-proxy.
	Address string
	// Ready says the platform has seen the replica ready. A replica that
	// is not ready yet is probed directly (ProbeHeaderName) and receives
	// traffic as soon as it answers, before the platform notices.
	Ready bool
}

// StatSink is where the activator's load reports go: the autoscaler.
// Implementations must never block the caller: they queue (boundedly) and
// drop on overflow.
type StatSink interface {
	// Report takes the Stats of one reporting period, one per revision
	// that saw traffic. The sink owns the slice after the call.
	Report(batch []stats.Stat)
	// Poke sends s at once, out of period: the first request for a
	// revision with no ready replica. It wakes a revision at zero.
	Poke(s stats.Stat)
}

// Clock is the time source of the activator's loops (reporting, probing,
// shutdown). Tests substitute a fake one they step.
type Clock interface {
	Now() time.Time
	// NewTicker returns a ticker of period d (see time.NewTicker).
	NewTicker(d time.Duration) Ticker
}

// Ticker is the part of *time.Ticker the activator uses.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// SystemClock is the real Clock.
type SystemClock struct{}

// Now implements Clock: the monotonic clock alone (proxycore.Now), for
// the intervals and deadlines the activator measures.
func (SystemClock) Now() time.Time { return proxycore.Now() }

// NewTicker implements Clock.
func (SystemClock) NewTicker(d time.Duration) Ticker { return systemTicker{time.NewTicker(d)} }

type systemTicker struct{ t *time.Ticker }

func (t systemTicker) C() <-chan time.Time { return t.t.C }
func (t systemTicker) Stop()               { t.t.Stop() }
