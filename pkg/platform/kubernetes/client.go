package kubernetes

import (
	"fmt"
	"net"
	"time"

	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
	"ebb.dev/ebb/pkg/platform/kubernetes/fence"
)

// The Lease client's rate limits: its own budget, never shared with the
// writes (kube-controller-manager gives its leader election a client of
// its own for the same reason). bucket.MaxCount buckets renewed every
// retry period (2s by default) are 50 calls a second, with the replica's
// own Lease, the takes and their confirming Lists on top.
const (
	leaseQPS   = 100
	leaseBurst = 200
)

// Clients are the autoscaler's API clients.
type Clients struct {
	// Writes is everything but the Leases: the reads, and the writes for
	// revisions, each fenced by its bucket's hold as it is sent
	// (fence.Transport) and shaped by the config's rate limiter (a wave of
	// scale changes drains at that budget).
	Writes k8s.Interface
	// Leases reads and writes the Leases only (leader.BucketOptions.Client):
	// its own rate limiter and its own connection, so that a renewal never
	// waits behind the writes, in the limiter or on the wire; in the API
	// server, the install gives these calls a priority level of their own
	// (deploy/kubernetes/flowcontrol.yaml).
	Leases k8s.Interface
	// Config is Writes' REST config (for the other clients of the same
	// budget: dynamic, metrics).
	Config *rest.Config
}

// NewClients returns the autoscaler's clients, found as kubectl finds its
// cluster: the kubeconfig file, else $KUBECONFIG's files, else
// ~/.kube/config, in kubeContext (empty: the current context), else the
// pod's service account (cluster.RESTConfigFor, with its raised rate
// limit).
func NewClients(kubeconfig, kubeContext, userAgent string) (Clients, error) {
	cfg, err := cluster.RESTConfigFor(kubeconfig, kubeContext, userAgent)
	if err != nil {
		return Clients{}, err
	}
	return ClientsFor(cfg)
}

// ClientsFor makes the clients of cfg (which it does not modify): Writes
// with cfg's rate limits and the fence on its transport, Leases with
// leaseQPS and LeaseBurst on a connection of its own.
func ClientsFor(cfg *rest.Config) (Clients, error) {
	wcfg := rest.CopyConfig(cfg)
	wcfg.Wrap(fence.Transport)
	w, err := k8s.NewForConfig(wcfg)
	if err != nil {
		return Clients{}, fmt.Errorf("kubernetes client: %w", err)
	}
	lcfg := rest.CopyConfig(cfg)
	lcfg.QPS, lcfg.Burst, lcfg.RateLimiter = leaseQPS, leaseBurst, nil
	if lcfg.Dial == nil {
		// A dialer of its own keeps client-go from sharing the writes'
		// cached transport: over HTTP/2 one connection multiplexes every
		// call, and a queue of writes on it delays the renewals too.
		lcfg.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	l, err := k8s.NewForConfig(lcfg)
	if err != nil {
		return Clients{}, fmt.Errorf("kubernetes Lease client: %w", err)
	}
	return Clients{Writes: w, Leases: l, Config: wcfg}, nil
}
