package main

import (
	"path/filepath"
	"testing"
	"time"

	"ebb.dev/ebb/pkg/autoscaler"
)

// e2eKnativeService is the sample app as a Knative Service named "hello"
// (the revision startEbb waits for), written as Knative's samples write
// one: annotations on the template, containerConcurrency, timeoutSeconds,
// an unnamed container with a port.
func e2eKnativeService(bin string) string {
	return `apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: hello, namespace: default}
spec:
  template:
    metadata:
      annotations:
        autoscaling.knative.dev/target: "5"
        autoscaling.knative.dev/target-utilization-percentage: "100"
        autoscaling.knative.dev/max-scale: "4"
    spec:
      containerConcurrency: 5
      timeoutSeconds: 30
      containers:
        - image: ebb.dev/hello:dev
          command: [` + `"` + filepath.Join(bin, "hello") + `"` + `]
          args: ["--latency=50ms", "--startup-delay=200ms"]
          ports: [{containerPort: 8080}]
  traffic: [{latestRevision: true, percent: 100}]
`
}

// TestEndToEndKnativeService: `autoscaler run` on a directory holding a
// Knative Service scales it from zero on the first request through the
// activator, up under hey's load with only 200s, and back to zero.
func TestEndToEndKnativeService(t *testing.T) {
	e := startEbb(t, map[string]string{"config.yaml": e2eConfig, "hello.yaml": e2eKnativeService(binaries(t))})
	// 10 clients on a 50 ms app keep 10 requests in flight: 10 / 5 = 2 pods.
	res, st := fromZeroUnderLoad(t, e, "6s", "10")
	t.Logf("under 10 clients: %d responses %v; desired %d, ready %d", res.Total, res.Codes, st.Desired, st.Ready)
	if st.Desired < 2 || st.Desired > 4 {
		t.Errorf("desired %d under 10 in flight at a target of 5 (containerConcurrency 5, max-scale 4); want 2 to 4", st.Desired)
	}
	e.waitFor(t, 30*time.Second, "scale to zero", func(st autoscaler.Status) bool { return st.Desired == 0 && st.Ready == 0 })
}
