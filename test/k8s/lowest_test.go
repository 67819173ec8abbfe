//go:build k8s

package k8s

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ebb.dev/ebb/pkg/autoscaler"
	kplat "ebb.dev/ebb/pkg/platform/kubernetes/reconciler"
)

// TestLeaderFailoverWithoutScaleDown: the leading autoscaler crashes
// (SIGKILL) while a revision runs at 3+ pods under load; the standby takes
// the Lease within the lease duration, publishes itself as the autoscaler
// Service's endpoint, starts the revision's decider in panic mode, and the
// Deployment is never scaled down on the way; no request fails.
func TestLeaderFailoverWithoutScaleDown(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "failover")
	createApp(t, appDeployment(t, ns, "busy", map[string]string{"autoscaling.knative.dev/target-burst-capacity": "0"}))
	waitFor(t, 30*time.Second, "one pod behind the Service", func() (bool, string) {
		to, addrs := route(ctx, ns, "busy")
		return to == kplat.RoutePods && len(addrs) == 1, fmt.Sprintf("route %s %v", to, addrs)
	})
	rc := newRouteClient(t, env.client, ns, "busy")
	res, stop := rc.runLoad(30)
	defer stop()
	waitFor(t, 40*time.Second, "at least 3 ready pods behind the Service", func() (bool, string) {
		n, _ := replicas(ctx, ns, "busy")
		to, addrs := route(ctx, ns, "busy")
		return n >= 3 && readyPods(ctx, ns, "busy") >= 3 && to == kplat.RoutePods && len(addrs) >= 3,
			fmt.Sprintf("%d replicas, route %s %v; load %s", n, to, addrs, res)
	})
	time.Sleep(2 * time.Second)

	old, p := leaderProcess(t, ctx)
	before, _ := replicas(ctx, ns, "busy")
	low := watchLowest(t, ns, "busy")
	killed := time.Now()
	p.kill(30 * time.Second) // a crash; the kubelet restarts it well after the failover
	t.Logf("killed the leader %s with the revision at %d replicas", old, before)

	leader := waitNewLeader(t, ctx, old)
	took := time.Since(killed)
	t.Logf("%s leads %v after the crash (lease duration %v)", leader, took.Round(100*time.Millisecond), leaseDuration)
	if took > leaseDuration+2*retryPeriod+time.Second {
		t.Errorf("failover took %v, want within the lease duration %v plus two retry periods", took, leaseDuration)
	}
	pod, err := env.client.CoreV1().Pods(ebbNS).Get(ctx, leader, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the new leader behind the autoscaler Service, deciding for the revision", func() (bool, string) {
		addrs, _ := serviceAddrs(ctx, env.client, ebbNS, autoscalerName)
		_, ok, state := status(ctx, ns, "busy")
		return len(addrs) == 1 && strings.HasPrefix(addrs[0], pod.Status.PodIP+":") && ok, fmt.Sprintf("%v; %s", addrs, state)
	})
	var first autoscaler.Status
	waitFor(t, 5*time.Second, "the new leader's first decision", func() (bool, string) {
		s, _, state := status(ctx, ns, "busy")
		first = s
		return !s.Time.IsZero(), state
	})
	if !first.Panic || first.Desired < before {
		t.Errorf("the new leader's first decision: %+v; want panic mode holding %d replicas (it starts with more than one ready pod)", first, before)
	}
	// The new leader holds the count for a stable window (it has no data
	// before that); from then on it follows the load, which needs 3 pods
	// (30 clients, 10 per pod).
	held := watchLowest(t, ns, "busy")
	time.Sleep(stableWindow - 2*time.Second)
	if n := held.lowest(); n < before {
		t.Errorf("the new leader scaled down to %d within its first stable window, want it to hold %d (%s)", n, before, held)
	}
	time.Sleep(10 * time.Second)
	stop()
	if n := low.lowest(); n < 3 {
		t.Errorf("the Deployment went down to %d replicas under a load that needs 3 (%s)", n, low)
	}
	t.Logf("load: %s; replicas from the crash on: %s", res, low)
	if res.failed.Load() != 0 {
		t.Errorf("load: %s; want every request to succeed", res)
	}
}

// lowestReplicas records a Deployment's replica counts from a point on.
type lowestReplicas struct {
	mu   sync.Mutex
	seen []int32
}

func (l *lowestReplicas) lowest() int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	low := int32(1 << 30)
	for _, n := range l.seen {
		low = min(low, n)
	}
	return low
}

func (l *lowestReplicas) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprint(l.seen)
}

// watchLowest polls the scale every 100ms until the test ends (a watch
// would do; polling also shows the value that held throughout).
func watchLowest(t *testing.T, ns, name string) *lowestReplicas {
	l := &lowestReplicas{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		last := int32(-1)
		for ctx.Err() == nil {
			if n, err := replicas(ctx, ns, name); err == nil && n != last {
				last = n
				l.mu.Lock()
				l.seen = append(l.seen, n)
				l.mu.Unlock()
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return l
}
