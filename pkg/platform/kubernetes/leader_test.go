package kubernetes

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func leaderOptions(c *fake.Clientset, id, ip string) LeaderOptions {
	return LeaderOptions{Client: c, Namespace: "ebb-system", Name: "ebb-autoscaler", Identity: id,
		LeaseDuration: time.Second, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 50 * time.Millisecond,
		Service: "ebb-autoscaler", IP: ip, Port: 9091}
}

// TestLeaderHandsOverOnStop: a stopping leader stops deciding before it
// lets go of the Lease, and the standby then leads and publishes itself.
func TestLeaderHandsOverOnStop(t *testing.T) {
	c := fake.NewClientset()
	var deciding atomic.Int32 // leaders deciding at once
	lead := func(ctx context.Context) {
		if deciding.Add(1) > 1 {
			t.Error("two leaders decide at once")
		}
		<-ctx.Done()
		time.Sleep(100 * time.Millisecond) // the deciders stopping
		deciding.Add(-1)
	}
	ctxA, stopA := context.WithCancel(context.Background())
	doneA := make(chan error, 1)
	go func() { doneA <- RunLeaderElected(ctxA, leaderOptions(c, "a", "10.0.0.1"), lead) }()
	waitLeader(t, c, "a", "10.0.0.1")

	ctxB, stopB := context.WithCancel(context.Background())
	defer stopB()
	doneB := make(chan error, 1)
	go func() { doneB <- RunLeaderElected(ctxB, leaderOptions(c, "b", "10.0.0.2"), lead) }()
	time.Sleep(300 * time.Millisecond) // b stands by
	stopA()
	if err := <-doneA; err != nil {
		t.Errorf("a stopped by its context: %v, want nil", err)
	}
	began := time.Now()
	waitLeader(t, c, "b", "10.0.0.2")
	if took := time.Since(began); took > 500*time.Millisecond {
		t.Errorf("b led %v after a stopped; a released Lease is taken within a retry period or two", took)
	}
	stopB()
	if err := <-doneB; err != nil {
		t.Errorf("b: %v", err)
	}
}

func TestLeaderWhoseWorkStopsLetsGo(t *testing.T) {
	c := fake.NewClientset()
	err := RunLeaderElected(context.Background(), leaderOptions(c, "a", ""), func(context.Context) {})
	if !errors.Is(err, ErrLeaderStopped) {
		t.Fatalf("err %v, want ErrLeaderStopped", err)
	}
	l, err := c.CoordinationV1().Leases("ebb-system").Get(context.Background(), "ebb-autoscaler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := l.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("Lease still held by %q", *h)
	}
}

// waitLeader waits until id holds the Lease and its address is the
// Service's endpoint.
func waitLeader(t *testing.T, c *fake.Clientset, id, ip string) {
	t.Helper()
	eventually(t, id+" leads and is the Service's endpoint", func() bool {
		l, err := c.CoordinationV1().Leases("ebb-system").Get(context.Background(), "ebb-autoscaler", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != id {
			return false
		}
		sl, err := c.DiscoveryV1().EndpointSlices("ebb-system").Get(context.Background(), LeaderSliceName("ebb-autoscaler"), metav1.GetOptions{})
		return err == nil && len(sl.Endpoints) == 1 && sl.Endpoints[0].Addresses[0] == ip
	})
}
