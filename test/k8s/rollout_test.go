//go:build k8s

package k8s

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
)

// setBuckets rolls the autoscaler Deployment to --buckets=n (0: the
// default, no flag).
func setBuckets(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := env.client.AppsV1().Deployments(ebbNS).Get(ctx, autoscalerName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := &d.Spec.Template.Spec.Containers[0]
		c.Args = slices.DeleteFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--buckets=") })
		if n > 0 {
			c.Args = append(c.Args, fmt.Sprint("--buckets=", n))
		}
		_, err = env.client.AppsV1().Deployments(ebbNS).Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("setting --buckets=%d: %v", n, err)
	}
}

// setPaused pauses or resumes the autoscaler Deployment's rollout.
func setPaused(t *testing.T, ctx context.Context, paused bool) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := env.client.AppsV1().Deployments(ebbNS).Get(ctx, autoscalerName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Paused = paused
		_, err = env.client.AppsV1().Deployments(ebbNS).Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("setting the autoscaler rollout's paused to %v: %v", paused, err)
	}
}

// bucketLeases counts the bucket Leases per count, and per holder of
// count n.
func bucketLeases(ctx context.Context, n int) (counts map[int]int, holders []string, err error) {
	ls, err := env.client.CoordinationV1().Leases(ebbNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	counts, holders = map[int]int{}, make([]string, n)
	for i := range ls.Items {
		if b, c, h, ok := cluster.ReadBucket(autoscalerName, &ls.Items[i]); ok {
			counts[c]++
			if c == n {
				holders[b] = h
			}
		}
	}
	return counts, holders, nil
}

// TestBucketsRollout (issue 33): --buckets rolls from 10 to 20 and back
// under load through the activator, an old autoscaler pod frozen
// (SIGSTOP) past its lease in the middle of each rollout (the rollout
// paused meanwhile, so that it is resumed rather than deleted). hey
// sees only 200s; after each rollout the new count's buckets are all
// held by the running pods and the old count's Leases are gone; the
// revisions at zero still wake.
func TestBucketsRollout(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "rollout")
	busy := "busy"
	createApp(t, appDeployment(t, ns, busy, nil))
	names := []string{"zero-a", "zero-b", "zero-c", "zero-d"}
	for _, name := range names {
		createApp(t, appDeployment(t, ns, name, nil))
	}
	waitFor(t, 30*time.Second, "the activator behind "+busy, func() (bool, string) {
		to, addrs := route(ctx, ns, busy)
		return len(addrs) > 0, fmt.Sprint(to, addrs)
	})
	t.Cleanup(func() {
		setBuckets(t, context.Background(), 0)
		waitFor(t, 120*time.Second, "the fleet back to its default count", func() (bool, string) {
			pods, _ := autoscalerPods(context.Background())
			v, _ := readFleet(context.Background())
			return len(pods) == autoscalers && balanced(v, pods), fmt.Sprint(pods, v)
		})
	})
	hey := startHeyThroughActivator(t, ctx, ns, busy, 150*time.Second)
	// The rollouts begin once hey's requests have woken busy. A wake
	// that arrives as the first rollout begins waits for both hand-offs
	// (a bucket overlapping a frozen replica of the other count waits for
	// it, and a bucket whose Lease is created decides a lease duration
	// later): 29 s in one run, past hey's 20 s timeout. This test measures
	// the rollouts under load; docs/kubernetes.md notes that wait.
	waitFor(t, 30*time.Second, busy+" woken by hey's requests before the rollouts", func() (bool, string) {
		d, err := env.client.AppsV1().Deployments(ns).Get(ctx, busy, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.ReadyReplicas > 0, fmt.Sprintf("%d ready of %d", d.Status.ReadyReplicas, d.Status.Replicas)
	})
	resumed := 0 // old pods frozen past their lease and resumed
	for _, n := range []int{20, 10} {
		old, err := autoscalerPods(ctx)
		if err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		setBuckets(t, ctx, n)
		var fresh string
		waitFor(t, 60*time.Second, "a new autoscaler pod running", func() (bool, string) {
			pods, _ := autoscalerPods(ctx)
			for _, p := range pods {
				if !slices.Contains(old, p) && env.kubelet.process(ebbNS, p, "autoscaler") != nil {
					fresh = p
					return true, ""
				}
			}
			return false, fmt.Sprint(pods)
		})
		// The rollout is paused while an old pod is frozen past its lease,
		// so that it is resumed (not deleted while stopped): it comes back
		// holding terms that others took, and must not write for them.
		setPaused(t, ctx, true)
		for _, victim := range old {
			p := env.kubelet.process(ebbNS, victim, "autoscaler")
			if p == nil || p.pid() <= 0 {
				continue
			}
			pid := p.pid()
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				t.Fatalf("SIGSTOP %s: %v", victim, err)
			}
			t.Logf("--buckets=%d: %s started, the rollout paused; froze %s (pid %d) for %v", n, fresh, victim, pid, leaseDuration+2*time.Second)
			time.Sleep(leaseDuration + 2*time.Second)
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Logf("SIGCONT %s: %v (it is gone)", victim, err)
			} else {
				resumed++
				t.Logf("resumed %s past its lease", victim)
				time.Sleep(leaseDuration) // it runs on, with the Leases it held taken, while the rollout waits
			}
			break
		}
		setPaused(t, ctx, false)
		waitFor(t, 120*time.Second, fmt.Sprintf("the %d buckets held by the new pods, no other count's Lease left", n), func() (bool, string) {
			counts, holders, err := bucketLeases(ctx, n)
			if err != nil {
				return false, err.Error()
			}
			pods, _ := autoscalerPods(ctx)
			if len(pods) != autoscalers || len(counts) != 1 {
				return false, fmt.Sprint(pods, counts, holders)
			}
			for _, h := range holders {
				if h == "" || !slices.Contains(pods, h) || slices.Contains(old, h) {
					return false, fmt.Sprint(pods, counts, holders)
				}
			}
			return true, ""
		})
		t.Logf("--buckets=%d rolled out in %v", n, time.Since(began).Round(100*time.Millisecond))
	}
	if resumed == 0 {
		t.Error("no old autoscaler pod was frozen past its lease and resumed in either rollout")
	}
	out, err := hey()
	if err != nil {
		t.Fatal(err)
	}
	if out.Total == 0 || out.Codes[http.StatusOK] != out.Total || len(out.Errors) != 0 {
		t.Errorf("hey through the activator: %v, errors %v; want only 200s\n%s", out.Codes, out.Errors, out.Output)
	}
	t.Logf("hey: %v", out.Codes)
	wake(t, ctx, ns, names)
	auditScaleWriters(t, ns)
}

// auditScaleWriters reads the API server's audit log (hack/testbed.sh
// records every write of a Deployment's scale, with the writer's user
// agent, ebb-autoscaler/POD) and fails the test if a revision of ns had
// its scale written by a replica after another replica had written it
// and then by the first again: the pods of each rollout are new, so a
// revision's writers must follow one another, never interleave.
func auditScaleWriters(t *testing.T, ns string) {
	t.Helper()
	writers := map[string][]string{} // revision -> its writers, in order, each once per run of writes
	n := 0
	for _, w := range auditScaleWrites(t, ns) {
		if w.code != http.StatusOK {
			continue
		}
		n++
		seen := writers[w.name]
		if len(seen) == 0 || seen[len(seen)-1] != w.writer {
			if slices.Contains(seen, w.writer) {
				t.Errorf("%s/%s: scale written by %s again after %v: two replicas wrote it in turn", ns, w.name, w.writer, seen)
			}
			writers[w.name] = append(seen, w.writer)
		}
	}
	if n == 0 {
		t.Errorf("no scale write of %s in the API server's audit log", ns)
	}
	t.Logf("%d scale writes audited: writers per revision %v", n, writers)
}
