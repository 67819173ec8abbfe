package faultfleet

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/ptr"
)

// leaseAPI is one replica's view of the fake API server's Leases: each
// call waits while the replica is suspended (a suspended process sends
// nothing), then is in flight 0-30 ms (one in 50: 300 ms) before it
// reaches the fake, and one in 50 fails there without landing. The
// delays are the replica's own: calls of several replicas overlap, as on
// an API server (the fake's reactors run under one lock, so a delay made
// there would queue every replica's renewals behind each other's).
type leaseAPI struct {
	*fake.Clientset
	w *world
	r *replica
}

func (a leaseAPI) CoordinationV1() coordinationclient.CoordinationV1Interface {
	return leaseGroup{CoordinationV1Interface: a.Clientset.CoordinationV1(), a: a}
}

var _ k8s.Interface = leaseAPI{}

type leaseGroup struct {
	coordinationclient.CoordinationV1Interface
	a leaseAPI
}

func (g leaseGroup) Leases(ns string) coordinationclient.LeaseInterface {
	return leaseCalls{LeaseInterface: g.CoordinationV1Interface.Leases(ns), a: g.a}
}

type leaseCalls struct {
	coordinationclient.LeaseInterface
	a leaseAPI
}

// send is a call's way to the fake: nil, or the failure it meets.
func (a leaseAPI) send(ctx context.Context) error {
	a.r.waitResumed()
	d := time.Duration(a.w.intn(30)) * time.Millisecond
	if a.w.intn(50) == 0 {
		d = 300 * time.Millisecond
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
	}
	if a.w.intn(50) == 0 {
		return apierrors.NewServiceUnavailable("the fake API server fails a call")
	}
	return nil
}

func (c leaseCalls) Create(ctx context.Context, l *coordinationv1.Lease, o metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if err := c.a.send(ctx); err != nil {
		return nil, err
	}
	return c.LeaseInterface.Create(ctx, l, o)
}

func (c leaseCalls) Update(ctx context.Context, l *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if err := c.a.send(ctx); err != nil {
		return nil, err
	}
	return c.LeaseInterface.Update(ctx, l, o)
}

func (c leaseCalls) Get(ctx context.Context, name string, o metav1.GetOptions) (*coordinationv1.Lease, error) {
	if err := c.a.send(ctx); err != nil {
		return nil, err
	}
	return c.LeaseInterface.Get(ctx, name, o)
}

func (c leaseCalls) List(ctx context.Context, o metav1.ListOptions) (*coordinationv1.LeaseList, error) {
	if err := c.a.send(ctx); err != nil {
		return nil, err
	}
	return c.LeaseInterface.List(ctx, o)
}

func (c leaseCalls) Delete(ctx context.Context, name string, o metav1.DeleteOptions) error {
	if err := c.a.send(ctx); err != nil {
		return err
	}
	return c.LeaseInterface.Delete(ctx, name, o)
}

// Watch is the fake's watch, its events held while the replica is
// suspended (a suspended process reads none: it hears of a take or a
// deletion only once it resumes) or its watch is stalled (a watch that
// lags: its events come later, in order).
func (c leaseCalls) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	in, err := c.LeaseInterface.Watch(ctx, o)
	if err != nil {
		return nil, err
	}
	out := &heldWatch{in: in, ch: make(chan watch.Event)}
	go func() {
		defer close(out.ch)
		for ev := range in.ResultChan() {
			c.a.r.waitResumed()
			if d := time.Until(time.Unix(0, c.a.r.watchStall.Load())); d > 0 {
				time.Sleep(d)
			}
			if l, ok := ev.Object.(*coordinationv1.Lease); ok {
				c.a.w.tl.add("%s: hears lease %s %s holder=%q rv=%s", c.a.r.id, l.Name, ev.Type, ptr.Deref(l.Spec.HolderIdentity, ""), l.ResourceVersion)
			}
			out.ch <- ev
		}
	}()
	return out, nil
}

type heldWatch struct {
	in watch.Interface
	ch chan watch.Event
}

func (h *heldWatch) Stop() {
	h.in.Stop()
	for range h.ch { // let the forwarder end
	}
}

func (h *heldWatch) ResultChan() <-chan watch.Event { return h.ch }
