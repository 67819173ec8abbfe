package leader

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster/clustertest"
)

func leaderOptions(c *fake.Clientset, id string) Options {
	return Options{Client: c, Namespace: config.SystemNamespace, Name: config.AutoscalerName, Identity: id,
		LeaseDuration: time.Second, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 50 * time.Millisecond}
}

// TestLeaderHandsOverOnStop: a stopping leader stops working before it
// lets go of the Lease, and the standby then leads.
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
	go func() { doneA <- Run(ctxA, leaderOptions(c, "a"), lead) }()
	waitLeader(t, c, "a")

	ctxB, stopB := context.WithCancel(context.Background())
	defer stopB()
	doneB := make(chan error, 1)
	go func() { doneB <- Run(ctxB, leaderOptions(c, "b"), lead) }()
	time.Sleep(300 * time.Millisecond) // b stands by
	stopA()
	if err := <-doneA; err != nil {
		t.Errorf("a stopped by its context: %v, want nil", err)
	}
	began := time.Now()
	waitLeader(t, c, "b")
	if took := time.Since(began); took > 500*time.Millisecond {
		t.Errorf("b led %v after a stopped; a released Lease is taken within a retry period or two", took)
	}
	stopB()
	if err := <-doneB; err != nil {
		t.Errorf("b: %v", err)
	}
}

// TestLeaderWhoseWorkStopsLeadsAgain: a leader whose work returns on its
// own lets the Lease go and campaigns again; stopped, it lets it go.
func TestLeaderWhoseWorkStopsLeadsAgain(t *testing.T) {
	c := fake.NewClientset()
	var terms atomic.Int32
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, leaderOptions(c, "a"), func(context.Context) {
			if terms.Add(1) == 2 {
				stop()
			}
		})
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := terms.Load(); n != 2 {
		t.Errorf("%d terms, want 2", n)
	}
	l, err := c.CoordinationV1().Leases(config.SystemNamespace).Get(context.Background(), config.AutoscalerName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := l.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("Lease still held by %q", *h)
	}
}

// waitLeader waits until id holds the Lease.
func waitLeader(t *testing.T, c *fake.Clientset, id string) {
	t.Helper()
	clustertest.Eventually(t, id+" leads", func() bool {
		l, err := c.CoordinationV1().Leases(config.SystemNamespace).Get(context.Background(), config.AutoscalerName, metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == id
	})
}
