package resourcemetrics

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"
)

// PodUsage is one pod's entry of the resource metrics API
// (metrics.k8s.io/v1beta1 PodMetrics): the usage of each container over
// [Timestamp-Window, Timestamp].
type PodUsage struct {
	Timestamp  time.Time
	Window     time.Duration
	Containers []ContainerUsage
}

// ContainerUsage is one container's usage in milli-units, as Kubernetes'
// metrics client reads it (Quantity.MilliValue): millicores for cpu,
// thousandths of a byte of working set for memory. Has* is false when the
// entry does not name the resource.
type ContainerUsage struct {
	Name               string
	CPUMilli, MemMilli int64
	HasCPU, HasMemory  bool
}

// usageByPod indexes a PodMetrics list by pod name.
func usageByPod(items []metricsv1beta1.PodMetrics) map[string]PodUsage {
	out := make(map[string]PodUsage, len(items))
	for i := range items {
		m := &items[i]
		u := PodUsage{Timestamp: m.Timestamp.Time, Window: m.Window.Duration, Containers: make([]ContainerUsage, len(m.Containers))}
		for j, c := range m.Containers {
			cu := ContainerUsage{Name: c.Name}
			if q, ok := c.Usage[corev1.ResourceCPU]; ok {
				cu.CPUMilli, cu.HasCPU = q.MilliValue(), true
			}
			if q, ok := c.Usage[corev1.ResourceMemory]; ok {
				cu.MemMilli, cu.HasMemory = q.MilliValue(), true
			}
			u.Containers[j] = cu
		}
		out[m.Name] = u
	}
	return out
}

// Resource is the pod's value of resource ("cpu" or "memory") in
// milli-units: the sum over its containers, or the named container's
// alone. As Kubernetes' metrics client (getPodMetrics and
// getContainerMetrics), the pod has no value (false, a missing pod for the
// replica calculation) when it lists no container, when any container
// lacks the resource, or when the named container is not listed.
func (u PodUsage) Resource(resource, container string) (int64, bool) {
	if len(u.Containers) == 0 {
		return 0, false
	}
	var sum int64
	for _, c := range u.Containers {
		if container != "" && c.Name != container {
			continue
		}
		v, ok := c.CPUMilli, c.HasCPU
		if resource == string(corev1.ResourceMemory) {
			v, ok = c.MemMilli, c.HasMemory
		}
		if !ok {
			return 0, false
		}
		if container != "" {
			return v, true
		}
		sum += v
	}
	return sum, container == ""
}

// Source lists the resource metrics API's PodMetrics of one
// namespace, as the usage of each pod by name.
type Source interface {
	ListPodMetrics(ctx context.Context, namespace string) (map[string]PodUsage, error)
}

// raw is the Source of a cluster: it Lists through the
// metrics clientset's REST client, asks for JSON and decodes only what the
// HPA reads (DecodePodMetricsList): about a fourteenth of the CPU of the
// typed client's decoding of the same List, and less than half of the
// whole read in protobuf (BenchmarkDecodePodMetricsList*,
// BenchmarkResourceMetricsRead).
func raw(c rest.Interface) Source { return rawSource{c} }

type rawSource struct{ c rest.Interface }

func (r rawSource) ListPodMetrics(ctx context.Context, ns string) (map[string]PodUsage, error) {
	body, err := r.c.Get().Namespace(ns).Resource("pods").SetHeader("Accept", "application/json").Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	d := getDecoder()
	defer putDecoder(d)
	if _, err := d.buf.ReadFrom(io.LimitReader(body, maxPodMetricsList+1)); err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	if d.buf.Len() > maxPodMetricsList {
		return nil, fmt.Errorf("the answer is over %d MiB: not read", maxPodMetricsList>>20)
	}
	return d.decode(d.buf.Bytes())
}

// maxPodMetricsList bounds the answer read: 1,000 pods' List is ~400 KB.
const maxPodMetricsList = 256 << 20

// typed is a Source on the typed metrics client: the
// fake clientset's, in tests, which has no REST client.
func typed(c metricsclient.MetricsV1beta1Interface) Source {
	return typedSource{c}
}

type typedSource struct {
	c metricsclient.MetricsV1beta1Interface
}

func (t typedSource) ListPodMetrics(ctx context.Context, ns string) (map[string]PodUsage, error) {
	l, err := t.c.PodMetricses(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return usageByPod(l.Items), nil
}

// Reader reads the resource metrics API with one List per
// namespace per Period, however many revisions of the namespace ask: the
// first caller in a period lists, the others wait for its answer. Safe for
// concurrent use.
type Reader struct {
	source Source
	period time.Duration
	now    func() time.Time

	mu   sync.Mutex // guards byNS; never held across the List
	byNS map[string]*nsMetrics
}

// nsMetrics is one namespace's latest List; done is closed when the List
// in flight ends (nil when none is).
type nsMetrics struct {
	at   time.Time
	pods map[string]PodUsage
	err  error
	done chan struct{}
}

// NewReader returns a reader that lists at most once per period
// per namespace (Kubernetes' HPA lists once per sync, 15s; metrics-server
// resolves 15s by default, so a shorter period only repeats its samples).
func NewReader(source Source, period time.Duration, now func() time.Time) *Reader {
	return &Reader{source: source, period: period, now: now, byNS: map[string]*nsMetrics{}}
}

// Namespace returns the usage of every pod of the namespace that the
// metrics API lists, by pod name. The map is shared: do not modify it.
func (r *Reader) Namespace(ctx context.Context, ns string) (map[string]PodUsage, error) {
	r.mu.Lock()
	e := r.byNS[ns]
	if e == nil {
		e = &nsMetrics{}
		r.byNS[ns] = e
	}
	for e.done != nil { // a List is in flight: wait for it
		done := e.done
		r.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		r.mu.Lock()
	}
	if !e.at.IsZero() && r.now().Sub(e.at) < r.period {
		pods, err := e.pods, e.err
		r.mu.Unlock()
		return pods, err
	}
	done := make(chan struct{})
	e.done = done
	r.mu.Unlock()

	pods, err := r.list(ctx, ns)

	r.mu.Lock()
	if ctx.Err() == nil { // a caller that gave up does not answer for the period
		e.at, e.pods, e.err = r.now(), pods, err
	}
	e.done = nil
	r.mu.Unlock()
	close(done)
	return pods, err
}

func (r *Reader) list(ctx context.Context, ns string) (map[string]PodUsage, error) {
	pods, err := r.source.ListPodMetrics(ctx, ns)
	if err != nil {
		return nil, fmt.Errorf("listing the resource metrics (metrics.k8s.io/v1beta1 PodMetrics) of namespace %s: %w", ns, err)
	}
	return pods, nil
}
