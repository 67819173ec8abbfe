package main

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/platform/local/resusage"
)

// The HPA walkthrough on the local platform: a CPU-bound app (cpuwork)
// with a 100m cpu request and a 50% target, measured from its processes.
const e2eHPAConfig = `apiVersion: v1
kind: ConfigMap
metadata: {name: config-autoscaler, namespace: ebb-system}
data:
  stable-window: "6s"
  hpa-cpu-initialization-period: "0s"
  hpa-downscale-stabilization: "8s"
`

const cpuRequest, cpuTarget = 0.1, 50.0 // cores, percent

func e2eHPARevision(bin string) string {
	return e2eDeployment(map[string]string{"autoscaling.knative.dev/class": "hpa.autoscaling.knative.dev",
		"autoscaling.knative.dev/metric": "cpu", "autoscaling.knative.dev/target": strconv.FormatFloat(cpuTarget, 'f', -1, 64),
		"autoscaling.knative.dev/min-scale": "1", "autoscaling.knative.dev/max-scale": "8"},
		e2eContainer("app", filepath.Join(bin, "cpuwork"), "--cpu=10ms")+"          resources: {requests: {cpu: 100m}}\n")
}

// appCPU is the CPU time of every cpuwork process of this test, by pid.
func appCPU(t *testing.T, bin string) map[int]time.Duration {
	t.Helper()
	out, _ := exec.Command("pgrep", "-f", filepath.Join(bin, "cpuwork")).Output()
	r := resusage.NewReader(os.DirFS("/"))
	cpu := map[int]time.Duration{}
	for _, f := range strings.Fields(string(out)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		if u, err := r.Read(pid); err == nil {
			cpu[pid] = u.CPU
		}
	}
	return cpu
}

// TestEndToEndHPACPU: under a steady load, the HPA class on cpu scales the
// CPU-bound app from 1 to what Kubernetes' formula predicts from the CPU
// the test itself measures on the app's processes (within one replica: the
// tolerance band and integer rounding), answers every request, and comes
// back to 1 after the shortened downscale stabilization window.
func TestEndToEndHPACPU(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc: the local platform measures cpu on Linux only")
	}
	bin := binaries(t)
	e := startEbb(t, map[string]string{"config.yaml": e2eHPAConfig, "hello.yaml": e2eHPARevision(bin)})
	e.waitFor(t, 20*time.Second, "one ready replica", func(st autoscaler.Status) bool { return st.Ready == 1 })

	// 3 clients at 5 requests per second each, 10ms of CPU per request:
	// about 0.15 cores, 3 or 4 pods at 50 millicores. The scale-up
	// overshoots while the first pod's 6s average still holds its lone
	// load (Kubernetes' walkthrough overshoots too), and the 8s
	// stabilization window holds that high for a while: the count is read
	// once the load has settled and the window has let go of the overshoot.
	const load = 26 * time.Second
	began := time.Now()
	done := startHey(t, e, "-z", load.String(), "-c", "3", "-q", "5")
	time.Sleep(14 * time.Second)
	before, at := appCPU(t, bin), time.Now()
	var last autoscaler.Status
	for time.Since(began) < load-time.Second {
		if st := e.status(t); st.Desired > 0 {
			last = st
		}
		time.Sleep(200 * time.Millisecond)
	}
	after, elapsed := appCPU(t, bin), time.Since(at)
	res := waitHey(t, done)

	var used time.Duration
	for pid, cpu := range after {
		used += cpu - before[pid] // a replica started meanwhile counts from 0
	}
	cores := used.Seconds() / elapsed.Seconds()
	predicted := int32(math.Ceil(cores / (cpuRequest * cpuTarget / 100)))
	t.Logf("load: %d responses %v in %v; the app used %.3f cores; predicted ceil(%.3f / %.3f) = %d pods; "+
		"desired %d, ready %d, utilization %.0f%%", res.Total, res.Codes, load, cores, cores, cpuRequest*cpuTarget/100,
		predicted, last.Desired, last.Ready, last.Stable)
	if res.Total == 0 || res.Codes[200] != res.Total || len(res.Errors) > 0 {
		t.Errorf("responses by code %v, errors %v; want every request answered 200", res.Codes, res.Errors)
	}
	if predicted < 2 {
		t.Fatalf("the load used %.3f cores, too little to call for a scale-up (the machine may be too busy for hey's rate)", cores)
	}
	if d := last.Desired - predicted; d < -1 || d > 1 {
		t.Errorf("desired %d under load, predicted %d from the measured %.3f cores; want within one", last.Desired, predicted, cores)
	}
	e.waitFor(t, 45*time.Second, "back to one replica", func(st autoscaler.Status) bool { return st.Desired == 1 && st.Ready == 1 })
}

// TestEndToEndHPACPUWithoutRequest: a cpu utilization of a container
// without resources.requests.cpu runs, as Kubernetes runs such an HPA: the
// replica serves, the scale is kept (even under load), and the status
// says why with the fix (ScalingActive False, FailedGetResourceMetric).
func TestEndToEndHPACPUWithoutRequest(t *testing.T) {
	bin := binaries(t)
	rev := e2eDeployment(map[string]string{"autoscaling.knative.dev/class": "hpa.autoscaling.knative.dev",
		"autoscaling.knative.dev/metric": "cpu", "autoscaling.knative.dev/target": "50",
		"autoscaling.knative.dev/min-scale": "1", "autoscaling.knative.dev/max-scale": "4"},
		e2eContainer("app", filepath.Join(bin, "cpuwork"), "--cpu=10ms"))
	e := startEbb(t, map[string]string{"config.yaml": e2eHPAConfig, "hello.yaml": rev})
	e.waitFor(t, 20*time.Second, "one ready replica", func(st autoscaler.Status) bool { return st.Ready == 1 })
	res := runHey(t, e, "-z", "4s", "-c", "3", "-q", "5")
	if res.Total == 0 || res.Codes[200] != res.Total {
		t.Errorf("responses by code %v, errors %v; want every request answered 200", res.Codes, res.Errors)
	}
	st := e.waitFor(t, 10*time.Second, "ScalingActive False", func(st autoscaler.Status) bool {
		for _, c := range st.Conditions {
			if c.Type == "ScalingActive" && c.Status == "False" {
				return true
			}
		}
		return false
	})
	for _, c := range st.Conditions {
		if c.Type == "ScalingActive" && (c.Reason != "FailedGetResourceMetric" || !strings.Contains(c.Message, `container "app" has no cpu request`) ||
			!strings.Contains(c.Message, "set resources.requests.cpu on the container")) {
			t.Errorf("ScalingActive %+v; want FailedGetResourceMetric naming the container and the fix", c)
		}
	}
	if st.Desired != 1 {
		t.Errorf("desired %d under load without a request, want the scale kept at 1", st.Desired)
	}
}
