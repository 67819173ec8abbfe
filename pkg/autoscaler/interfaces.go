package autoscaler

import (
	"context"
	"fmt"
	"strings"
	"time"

	"ebb.dev/ebb/pkg/podfailure"
	"ebb.dev/ebb/pkg/stats"
)

// RevisionKey names a revision.
type RevisionKey struct {
	Namespace, Name string
}

func (k RevisionKey) String() string { return k.Namespace + "/" + k.Name }

// ParseRevisionKey parses "namespace/name".
func ParseRevisionKey(s string) (RevisionKey, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return RevisionKey{}, fmt.Errorf("revision %q: want NAMESPACE/NAME, e.g. default/hello", s)
	}
	return RevisionKey{Namespace: ns, Name: name}, nil
}

// Pod is a ready replica of a revision.
type Pod struct {
	Name string
	// StatsAddr is the host:port of the queue-proxy's admin port, where
	// GET /stats answers one encoded stats.Stat.
	StatsAddr string
	// Started is when the pod started; pods older than a stable window are
	// preferred when only a sample is scraped.
	Started time.Time
}

// Platform is what the autoscaler needs from the platform running the
// revisions. Implementations must be safe for concurrent use: every
// revision's goroutine calls them.
type Platform interface {
	// ReadyPods returns the ready replicas of a revision.
	ReadyPods(ctx context.Context, rev RevisionKey) ([]Pod, error)
	// Scale sets the replica count of a revision.
	Scale(ctx context.Context, rev RevisionKey, replicas int32) error
	// SetActivatorInPath routes the revision's requests through the
	// activator (true) or straight to its pods (false).
	SetActivatorInPath(ctx context.Context, rev RevisionKey, inPath bool) error
}

// ScaleReason says why the autoscaler asks for a replica count.
type ScaleReason struct {
	// Code is the decision's main reason: the last bound that shaped the
	// count, else the metric (the "reason" of the autoscaler's log line).
	Code string
	// Message is every reason of the decision as sentences for people.
	Message string
}

// ZeroReporter is an optional extension of Platform for platforms whose
// scale targets outlive the autoscaler (Kubernetes: a Deployment's
// replica count). ScaledToZero reports whether the revision's scale
// target is at zero replicas and has been scaled since it was created:
// a decider that starts for it then (an autoscaler restart, a bucket
// changing hands) starts inactive instead of activating at the initial
// scale, which would wake every revision at zero. A new scale target
// created at zero still gets its initial scale.
type ZeroReporter interface {
	ScaledToZero(rev RevisionKey) bool
}

// StartFailureReporter is an optional extension of Platform for platforms
// that see why a revision's pods cannot start (Kubernetes: the pods'
// container states, the Deployment's conditions). The revision's status
// (the API, `autoscaler status` and `explain`) shows it.
type StartFailureReporter interface {
	Failure(rev RevisionKey) (podfailure.Failure, bool)
}

// reasonedScaler is an optional extension of Platform for platforms that
// show why a revision was scaled (Kubernetes records an Event on the
// Deployment). When the platform implements it, the autoscaler calls
// ScaleWithReason instead of Scale.
type reasonedScaler interface {
	ScaleWithReason(ctx context.Context, rev RevisionKey, replicas int32, why ScaleReason) error
}

// Warner is an optional extension of Platform for platforms that show a
// revision's problems where its users look: Kubernetes records a Warning
// Event on the Deployment, as its HPA controller does for a metric it
// cannot read (FailedGetResourceMetric, FailedGetPodsMetric).
type Warner interface {
	Warn(ctx context.Context, rev RevisionKey, reason, message string)
}

// Scraper reads the current stats of one pod.
type Scraper interface {
	Scrape(ctx context.Context, pod Pod) (stats.Stat, error)
}

// Clock is the autoscaler's source of time; tests use a fake.
type Clock interface {
	Now() time.Time
	// After waits for the duration, like time.After.
	After(d time.Duration) <-chan time.Time
}

// realClock is the wall clock.
type realClock struct{}

// Now is time.Now.
func (realClock) Now() time.Time { return time.Now() }

// After is time.After.
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
