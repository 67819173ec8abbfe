//go:build node

package node

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"ebb.dev/ebb/pkg/config"
)

// fastToZero is the annotation under which a revision goes back to zero
// in seconds: Knative's shortest stable window (with suiteConfig's grace
// period).
var fastToZero = map[string]string{config.AnnotationWindow: "6s"}

// wakes is how many cold starts TestColdStartFromZero measures
// (NODE_WAKES, default 20).
func wakes() int {
	if n, err := strconv.Atoi(os.Getenv("NODE_WAKES")); err == nil && n > 0 {
		return n
	}
	return 20
}

// coldStart is one wake from zero, split at what the test's watches saw
// (local receive times, ms) and Ebb's own log lines (ms and µs):
//
//	decision    the request sent -> the Deployment seen written to 1 (watch): Ebb's activator,
//	            its report, the decider and the scale write, plus the watch's delivery
//	scheduling  -> the pod seen bound to the node (watch: ReplicaSet controller, scheduler)
//	start       -> both containers seen running (watch: kubelet, containerd, runc: sandbox, CNI, containers)
//	readiness   -> the queue-proxy seen ready: the activator's "replica ready" (its log; its own probe),
//	            or the kubelet's Ready condition (watch) when that came first
//	forwarding  -> the response's first byte (the activator forwards, the app answers)
//
// ebbScaled is the request sent -> the autoscaler's "scaled" log line
// (after its write returned): Ebb's decision by its own clock.
// kubeletReady is start -> the pod's Ready condition seen (watch).
type coldStart struct {
	total, decision, scheduling, start, readiness, forwarding time.Duration
	ebbScaled, kubeletReady                                   time.Duration
	node                                                      nodeStart
}

// TestColdStartFromZero wakes a copy of the example app from zero through
// the activator's Service NODE_WAKES times and reports the request to
// first byte (p50, p95) and its split. Each wake must answer 200 and bring
// exactly one pod; the numbers are reported, not asserted.
func TestColdStartFromZero(t *testing.T) {
	ns := newNamespace(t, "node-cold")
	d := helloCopy(t, ns, "cold", fastToZero)
	// No added latency (the example's 100 ms is for load tests): the
	// first byte is the cold start's alone.
	appArgs(t, d, "--latency=0s")
	w := watchNamespace(t, ns)
	createDeployment(t, d)
	h := host(ns, d.Name)
	// The first wake after creating it: the activators learn the revision
	// and the autoscaler's decider starts; not counted.
	waitFor(t, 60*time.Second, "the activators know the revision", func() (bool, string) {
		code, _, err := get(context.Background(), env.activator, h, 60*time.Second)
		return err == nil && code == 200, fmt.Sprint(code, err)
	})
	var runs []coldStart
	for i := 0; i < wakes(); i++ {
		toZeroNow(t, ns, d.Name, 120*time.Second)
		time.Sleep(time.Second) // the activators' view settles
		t0 := time.Now()
		code, ttfb, err := get(context.Background(), env.activator, h, 60*time.Second)
		if err != nil || code != 200 {
			t.Fatalf("wake %d: %d %v", i+1, code, err)
		}
		first := t0.Add(ttfb)
		// Each watch event is in by the time the pod is ready and seen so.
		var pods []podLog
		waitFor(t, 10*time.Second, "the woken pod seen ready by the watch", func() (bool, string) {
			pods = w.podsAddedAfter(t0)
			return len(pods) >= 1 && !pods[0].ready.IsZero(), fmt.Sprint(len(pods), " pods")
		})
		if len(pods) != 1 {
			t.Fatalf("wake %d brought %d pods, want 1", i+1, len(pods))
		}
		p := pods[0]
		up := w.firstScaleUp(d.Name, t0)
		key := ns + "/" + d.Name
		ready := p.ready
		if l, ok := firstLog(ebbLogs(t, config.ActivatorName, t0), "replica ready", map[string]any{"revision": key}); ok && l.at.Before(ready) {
			ready = l.at
		}
		scaled, ok := firstLog(ebbLogs(t, config.AutoscalerName, t0), "scaled", map[string]any{"revision": key, "from": 0})
		if !ok {
			t.Fatalf("wake %d: no \"scaled\" line from 0 for %s in the autoscalers' logs", i+1, key)
		}
		c := coldStart{total: ttfb, decision: up.Sub(t0), scheduling: p.scheduled.Sub(up),
			start: p.started.Sub(p.scheduled), readiness: ready.Sub(p.started), forwarding: first.Sub(ready),
			ebbScaled: scaled.at.Sub(t0), kubeletReady: p.ready.Sub(p.started), node: nodeStartOf(p.name, t0)}
		t.Logf("wake %2d: %v = decision %v + scheduling %v + start %v + readiness %v + forwarding %v"+
			" (Ebb's scaled line %v after the request; kubelet Ready %v after start; node logs: kubelet %v, sandbox %v, containers %v)",
			i+1, ms(c.total), ms(c.decision), ms(c.scheduling), ms(c.start), ms(c.readiness), ms(c.forwarding),
			ms(c.ebbScaled), ms(c.kubeletReady), ms(c.node.kubelet), ms(c.node.sandbox), ms(c.node.containers))
		runs = append(runs, c)
	}
	report := func(name string, f func(coldStart) time.Duration) string {
		var ds []time.Duration
		for _, r := range runs {
			if strings.HasPrefix(name, "  ") && !r.node.ok {
				continue // the node's logs did not tell
			}
			ds = append(ds, f(r))
		}
		return fmt.Sprintf("%-13s p50 %6v  p95 %6v", name, ms(percentile(ds, 50)), ms(percentile(ds, 95)))
	}
	lines := []string{
		report("total", func(c coldStart) time.Duration { return c.total }),
		report("decision", func(c coldStart) time.Duration { return c.decision }),
		report("scheduling", func(c coldStart) time.Duration { return c.scheduling }),
		report("start", func(c coldStart) time.Duration { return c.start }),
		report("  kubelet", func(c coldStart) time.Duration { return c.node.kubelet }),
		report("  sandbox", func(c coldStart) time.Duration { return c.node.sandbox }),
		report("  containers", func(c coldStart) time.Duration { return c.node.containers }),
		report("readiness", func(c coldStart) time.Duration { return c.readiness }),
		report("forwarding", func(c coldStart) time.Duration { return c.forwarding }),
		report("Ebb's share", func(c coldStart) time.Duration { return c.decision + c.forwarding }),
		report("ebb-scaled", func(c coldStart) time.Duration { return c.ebbScaled }),
		report("kubelet-rdy", func(c coldStart) time.Duration { return c.kubeletReady }),
	}
	fmt.Printf("node: cold start from zero over %d wakes (request to first byte; load average %s):\n", len(runs), loadAvg())
	for _, l := range lines {
		fmt.Println("node:   " + l)
	}
}

// ms rounds d to the millisecond, for reading.
func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
