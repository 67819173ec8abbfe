package leader

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"ebb.dev/ebb/pkg/config"
)

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
}

// Run campaigns for the Lease and, while this replica holds it, runs
// lead with a context that ends when leadership does; after a loss (the
// Lease could not be renewed) or when lead returns on its own, it lets
// the Lease go and campaigns again. It returns when ctx ends, once lead
// has returned and the Lease is released (another replica takes it at
// once); the work stops before the Lease is let go, so two leaders never
// work at once. It fails only for options client-go refuses.
func Run(ctx context.Context, o Options, lead func(ctx context.Context)) error {
	setLeaderDefaults(&o)
	for ctx.Err() == nil {
		if err := campaign(ctx, o, lead); err != nil {
			return err
		}
	}
	return nil
}

// campaign is one term: until ctx ends, leadership is lost, or lead
// returns.
func campaign(ctx context.Context, o Options, lead func(ctx context.Context)) error {
	electCtx, stopElect := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElect()
	started, finished := make(chan struct{}), make(chan struct{})
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name},
			Client: o.Client.CoordinationV1(), LockConfig: resourcelock.ResourceLockConfig{Identity: o.Identity},
			Labels: map[string]string{config.PartOfLabel: config.ManagedBy}},
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
	select {
	case <-ctx.Done():
	case <-ran: // leadership lost: lead's context ended with it
	case <-finished: // lead returned on its own
	}
	waitLead := func() {
		select {
		case <-started:
			<-finished
		default:
		}
	}
	waitLead() // the work stops while the Lease is still held
	stopElect()
	<-ran // released
	waitLead()
	return nil
}

// runLeading runs lead until the lease is lost (lctx) or ctx ends.
func runLeading(ctx, lctx context.Context, o Options, lead func(context.Context)) {
	o.Logger.Info("leading", zap.String("lease", o.Namespace+"/"+o.Name), zap.String("identity", o.Identity))
	runCtx, cancel := context.WithCancel(lctx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
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
