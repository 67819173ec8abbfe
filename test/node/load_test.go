//go:build node

package node

import (
	"fmt"
	"testing"
	"time"

	"ebb.dev/ebb/pkg/config"
)

// TestHeyZeroToNToZero: hey with 50 clients for 60 s through the
// activator's Service on a copy of the example app at zero: it scales out
// to several real pods, every request gets a 200, and it is back at zero
// with no pod left after the load.
func TestHeyZeroToNToZero(t *testing.T) {
	ns := newNamespace(t, "node-hey")
	d := helloCopy(t, ns, "hey", fastToZero)
	createDeployment(t, d)
	waitZero(t, ns, d.Name, 120*time.Second)
	stop := maxReady(ns, d.Name)
	invalid := kubeProxyInvalidDrops()
	start := time.Now()
	r := runHey(t, env.activator, host(ns, d.Name), 50, 60*time.Second)
	most := stop()
	fmt.Printf("node: hey 50 clients 60 s from zero: %s; up to %d ready pods (load average %s)\n", r, most, loadAvg())
	if !r.only200() {
		t.Errorf("hey saw other than 200s: %s", r)
	}
	reportStuck(t, start, invalid)
	if most < 2 {
		t.Errorf("at most %d ready pods under 50 clients, want several", most)
	}
	waitZero(t, ns, d.Name, 120*time.Second)
	fmt.Printf("node: back at zero with no pod %v after the load ended\n", time.Since(start.Add(60*time.Second)).Round(time.Second))
}

// TestScaleDownUnderLoad: a revision at 5 replicas goes to 1 under a
// steady light load (4 clients for 60 s; 50 clients brought it to 5), with real termination (the kubelet's SIGTERM to the
// queue-proxy, its drain, the endpoint's removal): not one request of at
// least 10,000 gets other than a 200. Two paths: the revision's own
// Service straight to the pods (target-burst-capacity 0: the activator
// leaves the path; kube-proxy removes the endpoint), and through the
// activator's Service (the activator drops the pod).
func TestScaleDownUnderLoad(t *testing.T) {
	for _, tc := range []struct {
		name, tbc string
		direct    bool
	}{
		{name: "direct", tbc: "0", direct: true},
		{name: "activator", tbc: "-1", direct: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t, "node-down-"+tc.name)
			d := helloCopy(t, ns, "down", map[string]string{
				config.AnnotationWindow: "6s", "autoscaling.knative.dev/max-scale": "5", "autoscaling.knative.dev/min-scale": "1",
				"autoscaling.knative.dev/target-burst-capacity": tc.tbc, "autoscaling.knative.dev/target": "10",
			})
			appArgs(t, d, "--latency=10ms")
			createDeployment(t, d)
			h := host(ns, d.Name)
			waitReady(t, ns, d.Name, 1, 120*time.Second)
			addr := env.activator
			if tc.direct {
				addr = serviceAddr(t, ns, d.Name)
			}
			// 50 clients until 5 pods are ready; then the light load
			// starts and the heavy one stops.
			heavyStart, invalid := time.Now(), kubeProxyInvalidDrops()
			heavyWait, heavyStop := startHey(t, addr, h, 50, 150*time.Second)
			waitState(t, ns, d.Name, 140*time.Second, "5 ready pods under 50 clients", func(s state) bool { return s.ready == 5 })
			const light = 60 * time.Second
			start := time.Now()
			lightHey, _ := startHey(t, addr, h, 4, light)
			time.Sleep(time.Second)
			heavyStop()
			events := eventCounts(t, ns)
			heavy := heavyWait()
			fmt.Printf("node: scale-up 1 -> 5 under 50 clients (%s): %s\n", tc.name, heavy)
			reportStuck(t, heavyStart, invalid)
			if !heavy.only200() && !tc.direct {
				t.Errorf("the heavy load saw other than 200s: %s", heavy)
			} else if !heavy.only200() {
				// Seen once in four runs: one request of ~16,000 timed out
				// (hey's 20 s) while the revision's Service went from the
				// activators to the pods; not confirmed since. A connect
				// nobody answered held the activator's request for the
				// kernel's SYN retries then; it is bounded now
				// (ACTIVATOR_CONNECT_TIMEOUT), and a request held 15 s or
				// more is logged as a "slow request" with its stage
				// (docs/kubernetes.md, Tests). Reported, not failed: this
				// test is about the scale-down.
				t.Logf("KNOWN ISSUE: the scale-up straight to the pods saw other than 200s: %s", heavy)
			}
			// The scale-down, its pods' drain and deletion: all under the
			// light load.
			waitState(t, ns, d.Name, light-time.Since(start)-5*time.Second, "down to 1 pod under the light load",
				func(s state) bool { return s.spec == 1 && s.ready == 1 && s.pods == 1 })
			down := time.Since(start)
			r := lightHey()
			fmt.Printf("node: scale-down 5 -> 1 under load (%s): %s (one pod left %v after the heavy load; load average %s)\n",
				tc.name, r, down.Round(time.Second), loadAvg())
			if !r.only200() {
				t.Errorf("the light load saw other than 200s while scaling down: %s", r)
			}
			if r.total() < 10000 {
				t.Errorf("the light load made %d requests, want at least 10,000", r.total())
			}
			checkQuiet(t, ns, events, "scale-down 5 -> 1 ("+tc.name+")")
		})
	}
}
