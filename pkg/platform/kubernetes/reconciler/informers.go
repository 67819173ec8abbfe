package reconciler

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
)

// informerHooks are what the informers' events trigger.
type informerHooks struct {
	deployment func(types.NamespacedName) // an opted-in Deployment changed
	route      func(types.NamespacedName) // a revision's pods or public slice changed
	service    func(types.NamespacedName) // one of Ebb's Services changed
	activators func()                     // the activator's endpoints changed
	podGone    func(types.UID)
	config     func() // config-autoscaler changed
}

// caches are the platform's caches. Each watch is as narrow as the API
// allows: Deployments by label, the ConfigMap by name, the activator's
// EndpointSlices by Service, Ebb's Services and EndpointSlices by label.
// Pods cannot be selected by their owner's label, so every pod is watched,
// stripped to what routing and the HPA class need
// (cluster.PodTransformWithRequests).
type caches struct {
	factories []informers.SharedInformerFactory
	synced    []cache.InformerSynced

	deployments appslisters.DeploymentLister
	pods        corelisters.PodLister
	configMaps  corelisters.ConfigMapNamespaceLister
	activators  discoverylisters.EndpointSliceNamespaceLister
	services    corelisters.ServiceLister
	slices      discoverylisters.EndpointSliceLister
}

func newCaches(o Options, h informerHooks) *caches {
	inf := &caches{}
	factory := func(opts ...informers.SharedInformerOption) informers.SharedInformerFactory {
		f := informers.NewSharedInformerFactoryWithOptions(o.Client, o.Resync, opts...)
		inf.factories = append(inf.factories, f)
		return f
	}
	byLabel := func(sel string) informers.SharedInformerOption {
		return informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = sel })
	}

	deps := factory(byLabel(config.LabelEnabled + "=true")).Apps().V1().Deployments()
	inf.deployments = deps.Lister()
	inf.watch(deps.Informer(), func(obj any) {
		if d, ok := obj.(*appsv1.Deployment); ok && h.deployment != nil {
			h.deployment(types.NamespacedName{Namespace: d.Namespace, Name: d.Name})
		}
	})

	pods := factory(informers.WithTransform(cluster.PodTransformWithRequests())).Core().V1().Pods()
	inf.pods = pods.Lister()
	inf.watch(pods.Informer(), func(obj any) { inf.podChanged(obj, false, h) })
	_, _ = pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		inf.podChanged(obj, true, informerHooks{podGone: h.podGone})
	}})

	acts := factory(informers.WithNamespace(o.Namespace), byLabel(discoveryv1.LabelServiceName+"="+o.ActivatorService)).Discovery().V1().EndpointSlices()
	inf.activators = acts.Lister().EndpointSlices(o.Namespace)
	inf.watch(acts.Informer(), func(any) {
		if h.activators != nil {
			h.activators()
		}
	})

	cms := factory(informers.WithNamespace(o.Namespace), informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
		lo.FieldSelector = fields.OneTermEqualSelector("metadata.name", o.ConfigMapName).String()
	})).Core().V1().ConfigMaps()
	inf.configMaps = cms.Lister().ConfigMaps(o.Namespace)
	inf.watch(cms.Informer(), func(any) {
		if h.config != nil {
			h.config()
		}
	})

	owned := factory(byLabel(managedByLabel + "=" + managedBy))
	svcs, sls := owned.Core().V1().Services(), owned.Discovery().V1().EndpointSlices()
	inf.services, inf.slices = svcs.Lister(), sls.Lister()
	inf.watch(svcs.Informer(), func(obj any) { revisionOf(obj, h.service) })
	inf.watch(sls.Informer(), func(obj any) { revisionOf(obj, h.route) })
	return inf
}

// watch registers f for every add, update and delete of an informer, and
// the informer's synced func.
func (inf *caches) watch(i cache.SharedIndexInformer, f func(any)) {
	unwrap := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		f(obj)
	}
	_, _ = i.AddEventHandler(cache.ResourceEventHandlerFuncs{ // the registration handle is not needed: informers live as long as the platform
		AddFunc:    unwrap,
		UpdateFunc: func(_, obj any) { unwrap(obj) },
		DeleteFunc: unwrap,
	})
	inf.synced = append(inf.synced, i.HasSynced)
}

// start runs the informers until ctx ends and waits for their caches.
func (inf *caches) start(ctx context.Context, timeout time.Duration) error {
	for _, f := range inf.factories {
		f.Start(ctx.Done())
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if !cache.WaitForCacheSync(wctx.Done(), inf.synced...) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf(
			"the caches did not sync within %v: can the ServiceAccount list and watch Deployments, Pods, EndpointSlices, Services and its ConfigMap? See "+
				"docs/kubernetes.md, RBAC",
			timeout,
		)
	}
	return nil
}

// podChanged enqueues the revisions that select the pod.
func (inf *caches) podChanged(obj any, deleted bool, h informerHooks) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if h.podGone != nil && (deleted || pod.DeletionTimestamp != nil || pod.Status.PodIP == "") {
		h.podGone(pod.UID)
	}
	deps, err := inf.deployments.Deployments(pod.Namespace).List(labels.Everything())
	if err != nil || h.route == nil {
		return
	}
	for _, d := range deps {
		if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil && !sel.Empty() && sel.Matches(labels.Set(pod.Labels)) {
			h.route(types.NamespacedName{Namespace: d.Namespace, Name: d.Name})
		}
	}
}

// revisionOf calls f with the revision an Ebb object belongs to.
func revisionOf(obj any, f func(types.NamespacedName)) {
	m, err := meta.Accessor(obj)
	if err != nil || f == nil {
		return
	}
	if rev := m.GetLabels()[revisionLabel]; rev != "" {
		f(types.NamespacedName{Namespace: m.GetNamespace(), Name: rev})
	}
}

// podsOf lists the pods a Deployment selects (none for an empty or
// invalid selector).
func (inf *caches) podsOf(d *appsv1.Deployment) []*corev1.Pod {
	return cluster.SelectedPods(inf.pods, d)
}

func (inf *caches) deploymentList() []*appsv1.Deployment {
	ds, _ := inf.deployments.List(labels.Everything()) // a lister never fails
	return ds
}
