package activatorsource

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"

	"ebb.dev/ebb/pkg/activator"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/fielderr"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
	"ebb.dev/ebb/pkg/podfailure"
)

// Options configure a Source.
type Options struct {
	// Watches opens the list-watches (NewRESTWatches on a cluster).
	Watches Watches
	Logger  *zap.Logger
	// Namespace is Ebb's namespace, where the activator's Service is
	// (default config.SystemNamespace).
	Namespace string
	// ActivatorService is the activators' Service (default
	// config.ActivatorName); its ready endpoints are the activators sharing
	// each replica.
	ActivatorService string
	// QueueServingPort is the queue-proxy's serving port in every
	// revision's pods (default config.QueueServingPort).
	QueueServingPort int32
	// PodIP is this activator's address, to find its position among the
	// ready activators (Revision.ActivatorIndex); empty: unknown.
	PodIP string
	// AutoscalerPrefix names the autoscaler fleet's Leases (default
	// config.AutoscalerName; leader.BucketOptions.Prefix).
	AutoscalerPrefix string
	// Resync is the informers' resync period (default 10m).
	Resync time.Duration
	// SyncTimeout bounds the wait for the informers' first lists
	// (default 1m).
	SyncTimeout time.Duration
	// RecoverSettle is how long a pod of a revision whose pods crashed
	// after serving must stay ready before that cause is forgotten
	// (podfailure.Recovered; default podfailure.RecoverSettle, as the
	// autoscaler's reconciler): a replica ready for a moment between two
	// crashes keeps it, so the next run, dead before the kubelet saw it
	// ready, is still named a crash after serving.
	RecoverSettle time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (o *Options) setDefaults() {
	if o.Namespace == "" {
		o.Namespace = config.SystemNamespace
	}
	if o.ActivatorService == "" {
		o.ActivatorService = config.ActivatorName
	}
	if o.QueueServingPort == 0 {
		o.QueueServingPort = config.QueueServingPort
	}
	if o.AutoscalerPrefix == "" {
		o.AutoscalerPrefix = config.AutoscalerName
	}
	if o.Resync <= 0 {
		o.Resync = 10 * time.Minute
	}
	if o.SyncTimeout <= 0 {
		o.SyncTimeout = time.Minute
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.RecoverSettle <= 0 {
		o.RecoverSettle = podfailure.RecoverSettle
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Source implements activator.Platform on a cluster.
type Source struct {
	o         Options
	informers []cache.SharedIndexInformer

	deployments appslisters.DeploymentLister
	pods        corelisters.PodLister
	activators  discoverylisters.EndpointSliceNamespaceLister

	changed chan struct{} // buffered 1: a cache of the revisions changed

	// autoscalers is the fleet's view, from its Leases (their renewals,
	// every retry period, do not touch the revisions).
	autoscalers *Autoscalers

	// warned is owned by Watch's loop (view): "namespace/name key" -> the
	// last bad value logged.
	warned map[string]string
	// failures is owned by Watch's loop (view): "namespace/name" -> the
	// failure its pods were last seen in (cluster.StartFailure's prev:
	// a crash loop that served keeps its name, through a replica ready
	// for a moment, until cluster.Recovered); rebuilt on every view, so a
	// Deployment that is gone or has recovered leaves it.
	failures map[string]podfailure.Failure
	// recheck is owned by Watch's loop (view): when to build the view
	// again with no news from the cluster (0: not needed), the earliest
	// time a kept failure may have recovered.
	recheck time.Duration
}

// New returns a source; Watch starts it.
func New(o Options) (*Source, error) {
	if o.Watches == nil {
		return nil, errors.New("kubernetes activator source: no Watches")
	}
	o.setDefaults()
	s := &Source{o: o, changed: make(chan struct{}, 1), warned: map[string]string{}, autoscalers: newAutoscalers(o.AutoscalerPrefix)}
	byLabel := func(sel string) func(*metav1.ListOptions) {
		return func(lo *metav1.ListOptions) { lo.LabelSelector = sel }
	}
	deps := s.informer(o.Watches(deployments, metav1.NamespaceAll, byLabel(config.LabelEnabled+"=true")), &appsv1.Deployment{})
	s.deployments = appslisters.NewDeploymentLister(deps.GetIndexer())
	pods := s.informer(o.Watches(pods, metav1.NamespaceAll, nil), &corev1.Pod{})
	if err := pods.SetTransform(cluster.PodTransform); err != nil {
		return nil, fmt.Errorf("kubernetes activator source: %w", err)
	}
	s.pods = corelisters.NewPodLister(pods.GetIndexer())
	acts := s.informer(o.Watches(endpointSlices, o.Namespace, byLabel(discoveryv1.LabelServiceName+"="+o.ActivatorService)), &discoveryv1.EndpointSlice{})
	s.activators = discoverylisters.NewEndpointSliceLister(acts.GetIndexer()).EndpointSlices(o.Namespace)
	leases := cache.NewSharedIndexInformer(o.Watches(leases, o.Namespace, leasesSelector), &coordinationv1.Lease{}, o.Resync, cache.Indexers{})
	_, _ = leases.AddEventHandler(s.autoscalers.handler()) // lives as long as the source
	s.informers = append(s.informers, leases)
	return s, nil
}

// Autoscalers is the autoscaler fleet as its Leases say, for the
// activator's reports (statsclient.Router); current once Watch runs.
func (s *Source) Autoscalers() *Autoscalers { return s.autoscalers }

// informer makes an informer, indexed by namespace, whose every event
// pokes the Watch loop.
func (s *Source) informer(lw cache.ListerWatcher, example runtime.Object) cache.SharedIndexInformer {
	i := cache.NewSharedIndexInformer(lw, example, s.o.Resync,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	poke := func(any) {
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
	_, _ = i.AddEventHandler(cache.ResourceEventHandlerFuncs{ // the registration is never removed: the informers live as long as the source
		AddFunc: poke, UpdateFunc: func(_, obj any) { poke(obj) }, DeleteFunc: poke,
	})
	s.informers = append(s.informers, i)
	return i
}

// Watch implements activator.Platform: the complete list at once (after
// the caches are synced) and after every change, until ctx ends. It runs
// the informers and returns once they have stopped; call it once.
func (s *Source) Watch(ctx context.Context, apply func([]activator.Revision)) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, i := range s.informers {
		wg.Go(func() { i.RunWithContext(ctx) })
	}
	if err := s.waitForSync(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("kubernetes activator source: %w", err)
	}
	wake := time.NewTimer(time.Hour)
	defer wake.Stop()
	for {
		apply(s.view())
		wake.Stop()
		var recheck <-chan time.Time
		if s.recheck > 0 {
			wake.Reset(s.recheck)
			recheck = wake.C
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.changed:
		case <-recheck:
		}
	}
}

func (s *Source) waitForSync(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, s.o.SyncTimeout)
	defer cancel()
	synced := make([]cache.InformerSynced, 0, len(s.informers))
	for _, i := range s.informers {
		synced = append(synced, i.HasSynced)
	}
	if !cache.WaitForCacheSync(wctx.Done(), synced...) {
		return fmt.Errorf(
			"the caches did not sync within %v: can the ServiceAccount list and watch Deployments, Pods, EndpointSlices and Leases? See docs/kubernetes.md, RBAC",
			s.o.SyncTimeout,
		)
	}
	return nil
}

// view builds the list the activator applies.
func (s *Source) view() []activator.Revision {
	sls, _ := s.activators.List(labels.Everything()) // a lister never fails
	acts, _ := cluster.ActivatorEndpoints(sls, 0)
	index := activatorIndex(acts, s.o.PodIP)
	deps, _ := s.deployments.List(labels.Everything()) // a lister never fails
	out := make([]activator.Revision, 0, len(deps))
	failures := make(map[string]podfailure.Failure, len(s.failures))
	s.recheck = 0
	for _, d := range deps {
		rev := s.revision(d, failures)
		rev.Activators, rev.ActivatorIndex = max(len(acts), 1), index
		out = append(out, rev)
	}
	s.failures = failures
	slices.SortFunc(out, func(a, b activator.Revision) int { return cmp.Compare(a.Key(), b.Key()) })
	return out
}

// activatorIndex is the 1-based position of ip among the ready
// activators (sorted by address, as Knative numbers them); 0 when ip is
// empty or not among them (this activator is not ready yet).
func activatorIndex(acts []cluster.Endpoint, ip string) int {
	if ip == "" {
		return 0
	}
	for i, a := range acts {
		if a.IP == ip {
			return i + 1
		}
	}
	return 0
}

// revision is one Deployment's settings and replicas; a failure of its
// pods is added to failures.
func (s *Source) revision(d *appsv1.Deployment, failures map[string]podfailure.Failure) activator.Revision {
	ann := d.Spec.Template.Annotations
	rev := activator.Revision{Namespace: d.Namespace, Name: d.Name, Labels: d.Spec.Template.Labels, Timeout: cluster.TimeoutOf(d)}
	if v, ok := ann[config.AnnotationContainerConcurrency]; ok {
		cc, err := config.ParseContainerConcurrency(v)
		if err != nil {
			s.warn(d, err, "unlimited (0)")
		}
		rev.ContainerConcurrency = int(cc)
	}
	lb, err := activator.ParseLoadBalancing(ann[config.AnnotationLoadBalancing])
	if err != nil {
		s.warn(d, err, "auto")
	}
	rev.LoadBalancing = lb
	pods := cluster.SelectedPods(s.pods, d)
	var prev *podfailure.Failure
	if f, ok := s.failures[rev.Key()]; ok {
		prev = &f
	}
	if f, failing := cluster.StartFailure(prev, d, pods); failing {
		failures[rev.Key()] = f
		if !f.Pending {
			rev.Failure = &f // a pod waiting for a node: requests wait for it, until the progress deadline
		}
	} else if prev != nil && prev.AfterStart() {
		// A replica ready for a moment between two crashes is no recovery:
		// the next run may serve and die before the kubelet sees it ready,
		// and is a crash after serving all the same. Its requests go to the
		// ready replica meanwhile (no Failure on the revision).
		if ok, recheck := cluster.Recovered(pods, *prev, s.o.Now(), s.o.RecoverSettle); !ok {
			failures[rev.Key()] = *prev
			if recheck > 0 && (s.recheck == 0 || recheck < s.recheck) {
				s.recheck = recheck
			}
		}
	}
	for _, p := range pods {
		if cluster.PodAddressed(p) {
			rev.Replicas = append(rev.Replicas, activator.Replica{Address: cluster.HostPort(p.Status.PodIP, s.o.QueueServingPort), Ready: cluster.PodReady(p)})
		}
	}
	slices.SortFunc(rev.Replicas, func(a, b activator.Replica) int { return cmp.Compare(a.Address, b.Address) })
	return rev
}

// warn logs a bad annotation (a *fielderr.Error from pkg/config) once per
// value (the autoscaler reports it as an Event on the Deployment).
func (s *Source) warn(d *appsv1.Deployment, err error, using string) {
	fe := fielderr.Errors(err)
	if len(fe) == 0 {
		return
	}
	key, value := fe[0].Key, fe[0].Value
	id := d.Namespace + "/" + d.Name + " " + key
	seen := s.warned[id] == value
	s.warned[id] = value
	if !seen {
		s.o.Logger.Warn("bad annotation; using the default", zap.String("deployment", d.Namespace+"/"+d.Name),
			zap.String("key", key), zap.String("value", value), zap.Error(err), zap.String("using", using))
	}
}
