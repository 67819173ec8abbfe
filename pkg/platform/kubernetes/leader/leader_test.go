package leader

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster/clustertest"
)

func leaderOptions(c *fake.Clientset, id, ip string) Options {
	return Options{Client: c, Namespace: config.SystemNamespace, Name: config.AutoscalerName, Identity: id,
		LeaseDuration: time.Second, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 50 * time.Millisecond,
		Service: config.AutoscalerName, IP: ip, Port: config.AutoscalerAdminPort}
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
	go func() { doneA <- Run(ctxA, leaderOptions(c, "a", "10.0.0.1"), lead) }()
	waitLeader(t, c, "a", "10.0.0.1")

	ctxB, stopB := context.WithCancel(context.Background())
	defer stopB()
	doneB := make(chan error, 1)
	go func() { doneB <- Run(ctxB, leaderOptions(c, "b", "10.0.0.2"), lead) }()
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
	err := Run(context.Background(), leaderOptions(c, "a", ""), func(context.Context) {})
	if !errors.Is(err, ErrLeaderStopped) {
		t.Fatalf("err %v, want ErrLeaderStopped", err)
	}
	l, err := c.CoordinationV1().Leases(config.SystemNamespace).Get(context.Background(), config.AutoscalerName, metav1.GetOptions{})
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
	clustertest.Eventually(t, id+" leads and is the Service's endpoint", func() bool {
		l, err := c.CoordinationV1().Leases(config.SystemNamespace).Get(context.Background(), config.AutoscalerName, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != id {
			return false
		}
		sl, err := c.DiscoveryV1().EndpointSlices(config.SystemNamespace).Get(context.Background(), SliceName(config.AutoscalerName), metav1.GetOptions{})
		return err == nil && len(sl.Endpoints) == 1 && sl.Endpoints[0].Addresses[0] == ip
	})
}

func TestLeaderPortsWithStats(t *testing.T) {
	names := func(o Options) []string {
		var out []string
		for _, p := range leaderPorts(o) {
			out = append(out, *p.Name+":"+itoa32(*p.Port))
		}
		return out
	}
	if diff := cmp.Diff([]string{"http:9091"}, names(Options{Port: 9091})); diff != "" {
		t.Errorf("without stats port (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"http:9091", "stats:9093"}, names(Options{Port: 9091, StatsPort: 9093})); diff != "" {
		t.Errorf("with stats port (-want +got):\n%s", diff)
	}
}

func itoa32(n int32) string { return strconv.Itoa(int(n)) }
