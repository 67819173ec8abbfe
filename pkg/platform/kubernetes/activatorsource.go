package kubernetes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"ebb.dev/ebb/pkg/activator"
)

// ActivatorSource is the activator's platform on Kubernetes
// (activator.Platform): the opted-in Deployments with their settings, the
// addresses of their pods' queue-proxies, and the number of ready
// activators, which share every replica's capacity.
type ActivatorSource struct {
	o   Options
	inf *caches

	changed chan struct{} // buffered 1: a cache changed

	mu     sync.Mutex        // guards warned
	warned map[string]string // Deployment -> the last bad value logged
}

// NewActivatorSource returns a source; Watch starts it. Of the Options it
// reads Client, Logger, Namespace, ActivatorService, QueueServingPort and
// Resync.
func NewActivatorSource(o Options) (*ActivatorSource, error) {
	if o.Client == nil {
		return nil, errors.New("kubernetes activator source: no client")
	}
	o.setDefaults()
	s := &ActivatorSource{o: o, changed: make(chan struct{}, 1), warned: map[string]string{}}
	poke := func() {
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
	s.inf = newCaches(o, informerHooks{
		deployment: func(types.NamespacedName) { poke() },
		route:      func(types.NamespacedName) { poke() },
		activators: poke,
	})
	return s, nil
}

// Watch implements activator.Platform: the complete list at once (after
// the caches are synced) and after every change, until ctx ends.
func (s *ActivatorSource) Watch(ctx context.Context, apply func([]activator.Revision)) error {
	if err := s.inf.start(ctx, s.o.SyncTimeout); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("kubernetes activator source: %w", err)
	}
	for {
		apply(s.view())
		select {
		case <-ctx.Done():
			return nil
		case <-s.changed:
		}
	}
}

// view builds the list the activator applies.
func (s *ActivatorSource) view() []activator.Revision {
	sls, _ := s.inf.activators.List(labels.Everything()) // a lister never fails
	acts, _ := activatorEndpoints(sls, 0)
	deps := s.inf.deploymentList()
	out := make([]activator.Revision, 0, len(deps))
	for _, d := range deps {
		out = append(out, s.revision(d, max(len(acts), 1)))
	}
	slices.SortFunc(out, func(a, b activator.Revision) int { return cmp.Compare(a.Key(), b.Key()) })
	return out
}

func (s *ActivatorSource) revision(d *appsv1.Deployment, activators int) activator.Revision {
	ann := d.Spec.Template.Annotations
	rev := activator.Revision{Namespace: d.Namespace, Name: d.Name, Timeout: timeoutOf(d), Activators: activators}
	if v := ann[ContainerConcurrencyAnnotation]; v != "" {
		cc, err := strconv.Atoi(v)
		if err != nil || cc < 0 {
			s.warn(d, ContainerConcurrencyAnnotation, v, "unlimited (0)")
		} else {
			rev.ContainerConcurrency = cc
		}
	}
	lb, err := activator.ParseLoadBalancing(ann[activator.AnnotationLoadBalancing])
	if err != nil {
		s.warn(d, activator.AnnotationLoadBalancing, ann[activator.AnnotationLoadBalancing], "auto")
	}
	rev.LoadBalancing = lb
	for _, p := range s.inf.podsOf(d) {
		if podAddressed(p) {
			rev.Replicas = append(rev.Replicas, activator.Replica{Address: hostPort(p.Status.PodIP, s.o.QueueServingPort), Ready: podReady(p)})
		}
	}
	slices.SortFunc(rev.Replicas, func(a, b activator.Replica) int { return cmp.Compare(a.Address, b.Address) })
	return rev
}

// warn logs a bad annotation once per value (the autoscaler reports it as
// an Event on the Deployment).
func (s *ActivatorSource) warn(d *appsv1.Deployment, key, value, using string) {
	id := d.Namespace + "/" + d.Name + " " + key
	s.mu.Lock()
	seen := s.warned[id] == value
	s.warned[id] = value
	s.mu.Unlock()
	if !seen {
		s.o.Logger.Warn("bad annotation; using the default", zap.String("deployment", d.Namespace+"/"+d.Name),
			zap.String("key", key), zap.String("value", value), zap.String("using", using))
	}
}

// timeoutOf is the revision's request timeout: the queue-proxy sidecar's
// literal REVISION_TIMEOUT_SECONDS when it has one, else Knative's 300s.
func timeoutOf(d *appsv1.Deployment) time.Duration {
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Name != queueTimeoutEnv || e.ValueFrom != nil {
				continue
			}
			if f, err := strconv.ParseFloat(e.Value, 64); err == nil && f > 0 && f <= 3600 {
				return time.Duration(f * float64(time.Second))
			}
		}
	}
	return defaultTimeout
}
