package reconciler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform"
	"ebb.dev/ebb/pkg/platform/kubernetes/fence"
	"ebb.dev/ebb/pkg/platform/kubernetes/resourcemetrics"
	"ebb.dev/ebb/pkg/podfailure"
)

// Platform is the autoscaler's Kubernetes platform. Build it with New;
// Run starts the informers and the reconcilers.
type Platform struct {
	o   Options
	log *zap.Logger
	rec record.EventRecorder
	inf *caches
	// metrics reads the resource metrics API; nil without Options.Metrics.
	metrics *resourcemetrics.Reader

	deps   workqueue.TypedRateLimitingInterface[types.NamespacedName] // Deployments: listener, Services
	routes workqueue.TypedRateLimitingInterface[types.NamespacedName] // public EndpointSlices
	config chan struct{}                                              // buffered 1: the ConfigMap changed

	mu      sync.Mutex // guards the maps below (never held across I/O)
	revs    map[types.NamespacedName]*revState
	fed     map[types.NamespacedName]fedState // what the listener was given, per Deployment
	probed  map[types.UID]string              // pods whose queue-proxy answered, with the IP probed
	lastCfg map[string]string                 // the ConfigMap data last given to the listener
	cfgSeen bool
	starts  map[types.NamespacedName]startState // revisions whose pods cannot start (checkStart)
	bare    map[types.NamespacedName]string     // revisions with pods run without the queue-proxy: their names (checkSidecars)
	parks   map[types.NamespacedName]*parkState // revisions parked, waking or refused (park.go)
	costs   map[types.UID]int32                 // the pod-deletion-cost last written on each pod (deletioncost.go)

	failures atomic.Pointer[map[types.NamespacedName]podfailure.Failure] // starts' failures, immutable snapshot (Failure)

	own   []owned                      // per bucket (Options.Buckets): whether this replica decides for it
	fence atomic.Pointer[fence.Keeper] // SetFence
	ready chan struct{}                // closed once the caches synced and the ConfigMap was applied
}

// revState is the routing state of one revision.
type revState struct {
	// mu serializes the reconciles of the revision's public EndpointSlice
	// and guards the fields below. It is held across the API calls of one
	// reconcile on purpose: only this revision's callers wait, and a
	// reconcile that read an older wish can never overwrite a newer one.
	mu            sync.Mutex
	wantActivator bool   // what the autoscaler asked last (true until it asks)
	routed        route  // what the slice says, as last written
	routedN       int    // the addresses in it
	known         bool   // routed is known
	asked         bool   // the autoscaler has said where it wants the route
	sliceRV       string // resourceVersion of the slice as last written or read
}

// fedState is what the listener was last given for a Deployment.
type fedState struct {
	annotations map[string]string
	rejected    bool
}

// New returns a platform; it starts nothing.
func New(o Options) (*Platform, error) {
	if o.Client == nil {
		return nil, errors.New("kubernetes platform: no client")
	}
	o.setDefaults()
	p := &Platform{o: o, log: o.Logger, rec: o.Recorder,
		revs: map[types.NamespacedName]*revState{}, fed: map[types.NamespacedName]fedState{},
		probed: map[types.UID]string{}, starts: map[types.NamespacedName]startState{}, bare: map[types.NamespacedName]string{}, config: make(chan struct{}, 1),
		parks: map[types.NamespacedName]*parkState{}, costs: map[types.UID]int32{},
		own: make([]owned, o.Buckets), ready: make(chan struct{})}
	if o.Metrics != nil {
		p.metrics = resourcemetrics.NewReader(o.Metrics, o.MetricsPeriod, o.Now)
	}
	p.deps = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
		workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "ebb-deployments"})
	p.routes = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
		workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "ebb-routes"})
	p.inf = newCaches(o, informerHooks{
		deployment: func(k types.NamespacedName) { p.deps.Add(k); p.routes.Add(k) },
		route:      p.routes.Add,
		service:    func(k types.NamespacedName) { p.deps.Add(k); p.routes.Add(k) },
		activators: p.enqueueAllRoutes,
		podGone:    p.forgetProbe,
		config:     p.configChanged,
	})
	return p, nil
}

// SetListener sets who hears of revisions; call it before Run.
func (p *Platform) SetListener(l platform.Listener) { p.o.Listener = l }

// Run starts the informers, waits for their caches, gives the listener the
// ConfigMap and then every opted-in Deployment, and reconciles until ctx
// ends. It returns when every worker has stopped.
func (p *Platform) Run(ctx context.Context) error {
	if p.rec == nil {
		rec, stop := newEventRecorder(ctx, p.o.Client, config.AutoscalerName, p.fenced)
		defer stop()
		p.rec = rec
	}
	defer p.deps.ShutDown()
	defer p.routes.ShutDown()
	if err := p.inf.start(ctx, p.o.SyncTimeout); err != nil {
		if ctx.Err() != nil {
			return nil // stopped before the caches synced
		}
		return fmt.Errorf("kubernetes platform: %w", err)
	}
	p.applyConfig() // before any revision, so none starts on the defaults
	close(p.ready)
	var wg sync.WaitGroup
	for range p.o.Workers {
		wg.Go(func() { p.work(ctx, p.deps, p.reconcileDeployment) })
		wg.Go(func() { p.work(ctx, p.routes, p.reconcileRoute) })
	}
	wg.Go(func() { p.watchConfig(ctx) })
	p.log.Info("kubernetes platform running", zap.String("namespace", p.o.Namespace))
	<-ctx.Done()
	p.deps.ShutDown()
	p.routes.ShutDown()
	wg.Wait()
	return nil
}

// Ready is closed once Run has synced its caches and applied the
// ConfigMap: from then on Gain feeds a bucket's revisions.
func (p *Platform) Ready() <-chan struct{} { return p.ready }

// work runs reconciles from a queue until it shuts down. A failed key is
// retried with the queue's back-off (5ms doubling to 1000s, and 10/s
// overall), so no change is lost.
func (p *Platform) work(ctx context.Context, q workqueue.TypedRateLimitingInterface[types.NamespacedName],
	reconcile func(context.Context, types.NamespacedName) error) {
	for {
		key, quit := q.Get()
		if quit {
			return
		}
		err := reconcile(ctx, key)
		switch {
		case err == nil:
			q.Forget(key)
		case ctx.Err() != nil:
		default:
			p.log.Warn("reconcile failed; retrying with back-off", zap.String("deployment", key.String()),
				zap.Int("retries", q.NumRequeues(key)), zap.Error(err))
			q.AddRateLimited(key)
		}
		q.Done(key)
	}
}

func (p *Platform) enqueueAllRoutes() {
	for _, d := range p.inf.deploymentList() {
		p.routes.Add(types.NamespacedName{Namespace: d.Namespace, Name: d.Name})
	}
}

func (p *Platform) configChanged() {
	select {
	case p.config <- struct{}{}:
	default:
	}
}

func (p *Platform) watchConfig(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.config:
			p.applyConfig()
		}
	}
}

// deployment returns an opted-in Deployment from the cache. It is how
// every write is gated: the platform touches only Deployments with the
// label, whatever RBAC would allow.
func (p *Platform) deployment(key autoscaler.RevisionKey) (*appsv1.Deployment, error) {
	d, err := p.inf.deployments.Deployments(key.Namespace).Get(key.Name)
	if err != nil {
		return nil, fmt.Errorf("revision %s: no Deployment with the label %s=true: %w", key, config.LabelEnabled, errNotOptedIn)
	}
	return d, nil
}

// OptedIn reports whether a revision's Deployment exists with the label
// config.LabelEnabled (in the cache): the learned-state store keeps the
// state of such revisions only.
func (p *Platform) OptedIn(key autoscaler.RevisionKey) bool {
	_, err := p.deployment(key)
	return err == nil
}

var _ autoscaler.ZeroReporter = (*Platform)(nil)

// ScaledToZero implements autoscaler.ZeroReporter: the revision's
// Deployment (in the cache) is at zero replicas and its spec has changed
// since it was created (every change of its replicas, through the scale
// subresource too, raises its generation). A Deployment created at zero
// and never changed is a new revision: it gets its initial scale.
func (p *Platform) ScaledToZero(key autoscaler.RevisionKey) bool {
	d, err := p.deployment(key)
	return err == nil && d.Spec.Replicas != nil && *d.Spec.Replicas == 0 && d.Generation > 1
}

// DeploymentUID is the UID of a revision's Deployment, when it exists
// with the label config.LabelEnabled (in the cache): the owner of the
// revision's RevisionAutoscaler.
func (p *Platform) DeploymentUID(key autoscaler.RevisionKey) (types.UID, bool) {
	d, err := p.deployment(key)
	if err != nil {
		return "", false
	}
	return d.UID, true
}

// errNotOptedIn: the Deployment does not exist or lacks config.LabelEnabled.
var errNotOptedIn = errors.New("not an opted-in Deployment")

func (p *Platform) state(key types.NamespacedName) *revState {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.revs[key]
	if !ok {
		s = &revState{wantActivator: true}
		p.revs[key] = s
	}
	return s
}

func (p *Platform) forgetProbe(uid types.UID) {
	p.mu.Lock()
	delete(p.probed, uid)
	delete(p.costs, uid)
	p.mu.Unlock()
}

// nsName is the key of a revision.
func nsName(k autoscaler.RevisionKey) types.NamespacedName {
	return types.NamespacedName{Namespace: k.Namespace, Name: k.Name}
}

func revKey(k types.NamespacedName) autoscaler.RevisionKey {
	return autoscaler.RevisionKey{Namespace: k.Namespace, Name: k.Name}
}
