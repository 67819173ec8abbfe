package leader

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
)

// ErrLeadershipLost: the lease could not be renewed in time; another
// replica may lead now. The process should exit (and be restarted).
var ErrLeadershipLost = errors.New("lost the autoscaler lease")

// Options configure Run.
type Options struct {
	Client k8s.Interface
	Logger *zap.Logger
	// Namespace and Name are the Lease's (coordination.k8s.io).
	Namespace, Name string
	// Identity is this replica's name (the pod name).
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's
	// (defaults 15s, 10s, 2s): a dead leader is replaced within about
	// LeaseDuration + RetryPeriod.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Service, IP and Port: while leading, the EndpointSlice
	// Service-leader makes IP:Port the only endpoint of the Service (which
	// has no selector), so the activators' reports reach the leader.
	// Empty IP: nothing is published.
	Service string
	IP      string
	Port    int32
	// StatsPort, when not 0, is published beside Port as the port named
	// StatsPortName: the activators' reports, on a listener of its own
	// that a NetworkPolicy opens to the activators alone.
	StatsPort int32
}

// Run campaigns for the Lease and, while this replica holds
// it, runs lead with a context that ends when leadership does. It returns
// nil after ctx ends (once lead has returned and the Lease is released, so
// a standby takes over at once), or ErrLeadershipLost when the Lease
// could not be renewed (after lead has returned). Deciding stops before
// the Lease is let go, so two leaders never decide at once.
func Run(ctx context.Context, o Options, lead func(ctx context.Context)) error {
	setLeaderDefaults(&o)
	electCtx, stopElect := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElect()
	started, finished := make(chan struct{}), make(chan struct{})
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name},
			Client: o.Client.CoordinationV1(), LockConfig: resourcelock.ResourceLockConfig{Identity: o.Identity}},
		LeaseDuration: o.LeaseDuration, RenewDeadline: o.RenewDeadline, RetryPeriod: o.RetryPeriod,
		ReleaseOnCancel: true, Name: o.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				close(started)
				defer close(finished)
				runLeading(ctx, lctx, o, lead)
			},
			OnStoppedLeading: func() {},
			OnNewLeader: func(id string) {
				if id != o.Identity {
					o.Logger.Info("standing by", zap.String("leader", id), zap.String("lease", o.Namespace+"/"+o.Name))
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		le.Run(electCtx)
	}()
	waitLead := func() {
		select {
		case <-started:
			<-finished
		default:
		}
	}
	select {
	case <-ctx.Done():
		waitLead() // deciding stops while the lease is still held
		stopElect()
		<-ran // the lease is released
		waitLead()
		return nil
	case <-ran:
		waitLead()
		if ctx.Err() != nil {
			return nil
		}
		return ErrLeadershipLost
	case <-finished:
		// lead ended on its own (its platform failed, or the lease was
		// lost): let go of the lease rather than hold it idle.
		lost := !le.IsLeader()
		stopElect()
		<-ran
		switch {
		case ctx.Err() != nil:
			return nil
		case lost:
			return ErrLeadershipLost
		}
		return ErrLeaderStopped
	}
}

// ErrLeaderStopped: the leader's work ended while it held the lease; the
// lease was released and the process should exit.
var ErrLeaderStopped = errors.New("the leader's work stopped on its own; the lease is released")

// runLeading runs lead until the lease is lost (lctx) or ctx ends.
func runLeading(ctx, lctx context.Context, o Options, lead func(context.Context)) {
	o.Logger.Info("leading", zap.String("lease", o.Namespace+"/"+o.Name), zap.String("identity", o.Identity))
	runCtx, cancel := context.WithCancel(lctx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	if err := publishLeader(runCtx, o); err != nil {
		o.Logger.Error("cannot publish the leader's endpoint; activator reports will not arrive", zap.Error(err))
	}
	lead(runCtx)
	o.Logger.Info("stopped leading", zap.String("lease", o.Namespace+"/"+o.Name))
}

func setLeaderDefaults(o *Options) {
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = 15 * time.Second
	}
	if o.RenewDeadline <= 0 {
		o.RenewDeadline = 10 * time.Second
	}
	if o.RetryPeriod <= 0 {
		o.RetryPeriod = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
}

// SliceName is the EndpointSlice that points a Service at its leader.
func SliceName(service string) string { return service + "-leader" }

// publishLeader makes IP:Port the only endpoint of the Service.
func publishLeader(ctx context.Context, o Options) error {
	if o.IP == "" || o.Service == "" {
		return nil
	}
	family := discoveryv1.AddressTypeIPv4
	if containsColon(o.IP) {
		family = discoveryv1.AddressTypeIPv6
	}
	want := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: SliceName(o.Service), Namespace: o.Namespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: o.Service, discoveryv1.LabelManagedBy: cluster.EndpointSliceManager, config.ManagedByLabel: config.ManagedBy}},
		AddressType: family,
		Ports:       leaderPorts(o),
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{o.IP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: o.Namespace, Name: o.Identity}}},
	}
	cl := o.Client.DiscoveryV1().EndpointSlices(o.Namespace)
	have, err := cl.Get(ctx, want.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cl.Create(ctx, want, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	want.ResourceVersion = have.ResourceVersion
	if have.AddressType != family {
		if err := cl.Delete(ctx, want.Name, metav1.DeleteOptions{}); err != nil {
			return err
		}
		want.ResourceVersion = ""
		_, err = cl.Create(ctx, want, metav1.CreateOptions{})
		return err
	}
	_, err = cl.Update(ctx, want, metav1.UpdateOptions{})
	if err == nil {
		o.Logger.Info("published the leader's endpoint", zap.String("service", o.Namespace+"/"+o.Service), zap.String("address", cluster.HostPort(o.IP, o.Port)))
	}
	return err
}

// leaderPorts are the ports of the leader's endpoint: the admin port, and
// the stats port when apart.
func leaderPorts(o Options) []discoveryv1.EndpointPort {
	ports := []discoveryv1.EndpointPort{{Name: ptr.To(config.PortNameHTTP), Port: ptr.To(o.Port), Protocol: ptr.To(corev1.ProtocolTCP)}}
	if o.StatsPort != 0 {
		ports = append(ports, discoveryv1.EndpointPort{Name: ptr.To(config.PortNameStats), Port: ptr.To(o.StatsPort), Protocol: ptr.To(corev1.ProtocolTCP)})
	}
	return ports
}

func containsColon(s string) bool {
	for i := range len(s) {
		if s[i] == ':' {
			return true
		}
	}
	return false
}
