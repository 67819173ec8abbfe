//go:build k8s

package k8s

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"ebb.dev/ebb/internal/heytest"
	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/autoscaler/bucket"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
	kplat "ebb.dev/ebb/pkg/platform/kubernetes/reconciler"
)

// tick is suiteConfig's tick-interval (the default).
const tick = 2 * time.Second

// TestShardedFleet: the autoscaler scales out by buckets, as Knative's
// does (docs/kubernetes.md, "Sharding").
//
//   - Scaled from 2 to 3 replicas, the fleet rebalances (each holds 3 or
//     4 of the 10 buckets) without restarting the first two.
//   - A revision per bucket: each is decided by exactly one replica, the
//     holder of its bucket, and a request through the activator wakes
//     each from zero (its report reached that replica).
//   - SIGKILL of the replica deciding for a revision under hey load (sent
//     through the activator, which reports it): its buckets move within
//     the lease duration + 5s; the revision is never scaled down (the new
//     holder starts in panic, holding the count); hey sees only 200s; the
//     revisions of the other replicas' buckets see no gap in their
//     decisions.
//   - Every opted-in pod created throughout (a dry run every 500ms) has
//     the queue-proxy; a create refused because the dead replica had its
//     review is tried again, as a ReplicaSet does (proveWebhook).
func TestShardedFleet(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "sharded")
	hook := proveWebhook(t, ns, 500*time.Millisecond)

	// Scale out without a restart.
	first, err := autoscalerPods(ctx)
	if err != nil || len(first) != autoscalers {
		t.Fatalf("autoscaler pods %v (%v), want %d", first, err, autoscalers)
	}
	pids := map[string]int{}
	for _, p := range first {
		pids[p] = env.kubelet.process(ebbNS, p, "autoscaler").pid()
	}
	three := fleetOfThree(t, ctx, first, 90*time.Second, func() {})
	began := time.Now()
	v := waitBalanced(t, ctx, 30*time.Second, three)
	t.Logf("3 replicas hold %v, %v after the third started", v.load(), time.Since(began).Round(100*time.Millisecond))
	for p, pid := range pids {
		if now := env.kubelet.process(ebbNS, p, "autoscaler").pid(); now != pid {
			t.Errorf("%s was restarted (pid %d, then %d): rebalancing must not restart a replica", p, pid, now)
		}
	}

	// A revision per bucket, each decided by one replica, woken by its report.
	names := make([]string, buckets)
	for b := range buckets {
		names[b] = revisionInBucket(ns, "rev", b)
		createApp(t, appDeployment(t, ns, names[b], map[string]string{"autoscaling.knative.dev/initial-scale": "0"}))
	}
	waitFor(t, 30*time.Second, "each revision decided by exactly one replica, its bucket's holder", func() (bool, string) {
		ok, state := decidedOnce(ctx, ns, names)
		return ok, state
	})
	for _, name := range names {
		waitFor(t, 20*time.Second, "the activator behind "+name, func() (bool, string) {
			to, addrs := route(ctx, ns, name)
			return to == kplat.RouteActivator && len(addrs) == activators, fmt.Sprint(to, addrs)
		})
	}
	wake(t, ctx, ns, names)

	// SIGKILL under load.
	busy := revisionInBucket(ns, "busy", 0)
	createApp(t, appDeployment(t, ns, busy, map[string]string{"autoscaling.knative.dev/target-burst-capacity": "0"}))
	victim, p := ownerProcess(t, ctx, ns, busy)
	v, _ = readFleet(ctx)
	var steady []string // a revision of each other replica, under light load
	for _, r := range three {
		if r != victim {
			steady = append(steady, revisionInBucket(ns, "steady", slices.Index(v.holders, r)))
		}
	}
	for _, name := range steady {
		createApp(t, appDeployment(t, ns, name, nil))
	}
	waitFor(t, 20*time.Second, "a route to "+busy, func() (bool, string) { // the load counts every failure
		to, addrs := route(ctx, ns, busy)
		return len(addrs) > 0, fmt.Sprint(to, addrs)
	})
	busyLoad := newRouteClient(t, env.client, ns, busy)
	res, stopBusy := busyLoad.runLoad(30)
	defer stopBusy()
	for _, name := range steady {
		_, stop := newRouteClient(t, env.client, ns, name).runLoad(1)
		defer stop()
	}
	waitFor(t, 60*time.Second, "at least 3 ready pods of "+busy, func() (bool, string) {
		n, _ := replicas(ctx, ns, busy)
		to, addrs := route(ctx, ns, busy)
		return n >= 3 && readyPods(ctx, ns, busy) >= 3 && to == kplat.RoutePods, fmt.Sprintf("%d replicas, route %s %v; load %s", n, to, addrs, res)
	})
	gaps := watchDecisions(t, ctx, ns, steady, victim)
	hey := startHeyThroughActivator(t, ctx, ns, busy, 25*time.Second)
	time.Sleep(3 * time.Second) // the activator's reports flow to the victim

	before, _ := replicas(ctx, ns, busy)
	low := watchLowest(t, ns, busy)
	moving := victimBuckets(ctx, victim)
	killed := time.Now()
	p.kill(30 * time.Second) // a crash; the kubelet restarts it well after the failover
	t.Logf("killed %s, holding buckets %v, with %s at %d replicas", victim, moving, busy, before)
	waitFor(t, leaseDuration+5*time.Second, "the dead replica's buckets held by the others", func() (bool, string) {
		v, err := readFleet(ctx)
		if err != nil {
			return false, err.Error()
		}
		for _, b := range moving {
			if h := v.holders[b]; h == "" || h == victim {
				return false, v.String()
			}
		}
		return true, ""
	})
	t.Logf("its buckets moved %v after the crash (lease duration %v)", time.Since(killed).Round(100*time.Millisecond), leaseDuration)
	var firstDecision autoscaler.Status
	waitFor(t, 10*time.Second, "the new owner's first decision for "+busy, func() (bool, string) {
		s, ok, state := status(ctx, ns, busy)
		firstDecision = s
		return ok && s.Time.After(killed), state
	})
	if !firstDecision.Panic || firstDecision.Desired < before {
		t.Errorf("the new owner's first decision: %+v; want panic mode holding %d replicas", firstDecision, before)
	}
	held := watchLowest(t, ns, busy)
	time.Sleep(stableWindow - 2*time.Second)
	if n := held.lowest(); n < before {
		t.Errorf("the new owner scaled %s down to %d within its first stable window, want it to hold %d (%s)", busy, n, before, held)
	}
	gaps.stop() // before the killed replica comes back (and takes buckets again)
	out, err := hey()
	if err != nil {
		t.Fatal(err)
	}
	stopBusy()
	if n := low.lowest(); n < 3 {
		t.Errorf("%s went down to %d replicas under a load that needs 3 (%s)", busy, n, low)
	}
	if out.Total == 0 || out.Codes[http.StatusOK] != out.Total || len(out.Errors) != 0 {
		t.Errorf("hey through the activator: %v, errors %v; want only 200s\n%s", out.Codes, out.Errors, out.Output)
	}
	if res.failed.Load() != 0 {
		t.Errorf("the load on %s: %s; want every request to succeed", busy, res)
	}
	if g := gaps.max(); g > tick+2*time.Second {
		t.Errorf("the longest gap between decisions of a revision of another bucket: %v (%s); want about the tick (%v)", g, gaps, tick)
	}
	t.Logf("hey: %v; load: %s; %s from the crash on: %s; gaps between the others' decisions: %s", out.Codes, res, busy, low, gaps)
	hook.check(t)
}

// newest is the pod of now that was not in before.
func newest(now, before []string) string {
	for _, p := range now {
		if !slices.Contains(before, p) {
			return p
		}
	}
	return ""
}

// scaleAutoscalers sets the autoscaler Deployment's replicas.
func scaleAutoscalers(t *testing.T, ctx context.Context, n int32) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := env.client.AppsV1().Deployments(ebbNS).GetScale(ctx, autoscalerName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.Replicas = n
		_, err = env.client.AppsV1().Deployments(ebbNS).UpdateScale(ctx, autoscalerName, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("scaling %s to %d: %v", autoscalerName, n, err)
	}
}

// decidedOnce: every replica's own revisions (its scope=local list),
// together, hold each name once, listed by the holder of its bucket.
func decidedOnce(ctx context.Context, ns string, names []string) (bool, string) {
	v, err := readFleet(ctx)
	if err != nil {
		return false, err.Error()
	}
	by := map[string][]string{}
	for id, r := range v.replicas {
		list, err := replicaStatuses(ctx, r)
		if err != nil {
			return false, err.Error()
		}
		for _, s := range list {
			if s.Namespace == ns {
				by[s.Name] = append(by[s.Name], id)
			}
		}
	}
	for _, name := range names {
		want := v.holders[bucket.Of(ns+"/"+name, buckets)]
		if got := by[name]; len(got) != 1 || got[0] != want {
			return false, fmt.Sprintf("%s decided by %v, its bucket held by %q", name, got, want)
		}
	}
	return true, ""
}

// wake sends one request to each revision through the activator and
// waits for each to be scaled from zero by the replica that holds its
// bucket: the activator's report reached it.
func wake(t *testing.T, ctx context.Context, ns string, names []string) {
	t.Helper()
	var wg sync.WaitGroup
	codes := make([]int, len(names))
	errs := make([]error, len(names))
	for i, name := range names {
		rc := newRouteClient(t, env.client, ns, name)
		wg.Go(func() {
			rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			codes[i], _, errs[i] = rc.get(rctx)
		})
	}
	wg.Wait()
	for i, name := range names {
		if codes[i] != http.StatusOK || errs[i] != nil {
			t.Errorf("the request to %s at zero: status %d, %v", name, codes[i], errs[i])
		}
	}
	waitFor(t, 30*time.Second, "each revision scaled from zero", func() (bool, string) {
		for _, name := range names {
			if n, err := replicas(ctx, ns, name); err != nil || n < 1 {
				return false, fmt.Sprintf("%s at %d replicas (%v)", name, n, err)
			}
		}
		return true, ""
	})
}

// victimBuckets are the buckets a replica holds.
func victimBuckets(ctx context.Context, id string) []int {
	v, _ := readFleet(ctx)
	var out []int
	for b, h := range v.holders {
		if h == id {
			out = append(out, b)
		}
	}
	return out
}

// gapWatch records, for each watched revision, the longest time between
// two of its decisions, as the replicas deciding for them say.
type gapWatch struct {
	stop func() // ends the watch and waits for it
	mu   sync.Mutex
	last map[string]time.Time
	gap  map[string]time.Duration
}

func (g *gapWatch) max() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Max(append(slices.Collect(maps.Values(g.gap)), 0))
}

func (g *gapWatch) String() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return fmt.Sprint(g.gap)
}

// watchDecisions polls, every 200ms until the test ends, the replicas
// other than skip for the decisions of the named revisions.
func watchDecisions(t *testing.T, ctx context.Context, ns string, names []string, skip string) *gapWatch {
	g := &gapWatch{last: map[string]time.Time{}, gap: map[string]time.Duration{}}
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for wctx.Err() == nil {
			v, _ := readFleet(wctx)
			for id, r := range v.replicas {
				if id != skip {
					g.observe(wctx, ns, names, r)
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	var once sync.Once
	g.stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(g.stop)
	return g
}

func (g *gapWatch) observe(ctx context.Context, ns string, names []string, r cluster.Replica) {
	list, err := replicaStatuses(ctx, r)
	if err != nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, s := range list {
		if s.Namespace != ns || !slices.Contains(names, s.Name) {
			continue
		}
		at := decidedAt(s)
		if prev, ok := g.last[s.Name]; ok && at.After(prev) {
			g.gap[s.Name] = max(g.gap[s.Name], at.Sub(prev))
		}
		if at.After(g.last[s.Name]) {
			g.last[s.Name] = at
		}
	}
}

// startHeyThroughActivator runs hey against the first activator, with the
// revision's host, for d; the returned func waits for its report.
func startHeyThroughActivator(t *testing.T, ctx context.Context, ns, name string, d time.Duration) func() (heytest.Result, error) {
	t.Helper()
	acts, err := serviceAddrs(ctx, env.client, ebbNS, activatorName)
	if err != nil || len(acts) == 0 {
		t.Fatalf("activators %v: %v", acts, err)
	}
	hey := heytest.Path(t)
	var res heytest.Result
	var wg sync.WaitGroup
	wg.Go(func() {
		res, err = heytest.Run(ctx, hey, "-z", d.String(), "-c", "10", "-host", name+"."+ns+".svc.cluster.local", "http://"+acts[0]+"/")
	})
	return func() (heytest.Result, error) { wg.Wait(); return res, err }
}

// fleetOfThree scales the autoscalers from first (deploy/'s fleet) to 3
// and returns the three pods once the new one runs. Its cleanup runs
// before, then brings the fleet back to deploy/'s replicas, every one
// alive, for the tests after (waiting up to back).
func fleetOfThree(t *testing.T, ctx context.Context, first []string, back time.Duration, before func()) []string {
	t.Helper()
	scaleAutoscalers(t, ctx, 3)
	t.Cleanup(func() {
		before()
		scaleAutoscalers(t, context.Background(), autoscalers)
		waitFor(t, back, "the fleet back to its replicas", func() (bool, string) {
			pods, _ := autoscalerPods(context.Background())
			v, _ := readFleet(context.Background())
			return len(pods) == autoscalers && balanced(v, pods), fmt.Sprint(pods, v)
		})
	})
	var three []string
	waitFor(t, 30*time.Second, "three autoscaler pods", func() (bool, string) {
		three, _ = autoscalerPods(ctx)
		return len(three) == 3 && env.kubelet.process(ebbNS, newest(three, first), "autoscaler") != nil, fmt.Sprint(three)
	})
	return three
}
