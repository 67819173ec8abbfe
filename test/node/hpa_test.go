//go:build node

package node

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"ebb.dev/ebb/pkg/config"
)

// imageRef is make images' REGISTRY/NAME:VERSION of one image, from
// images.txt (EBB_IMAGES): loaded into the node's containerd, so that
// it starts without a pull.
func imageRef(t *testing.T, name string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(env.images, "images.txt"))
	if err != nil {
		t.Fatalf("make images' list (EBB_IMAGES): %v", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fs := strings.Fields(s.Text()); len(fs) >= 2 && fs[0] == name {
			return fs[1]
		}
	}
	t.Fatalf("no image %s in %s", name, f.Name())
	return ""
}

// TestHPACPU: the HPA class on cpu, read from the real cgroups of the
// pods' containers (the kubelet's resource metrics, through
// metrics-server and the API server's aggregation layer): a copy of the
// example app running cpuwork (20 ms of CPU a request, a request of
// 100m; the webhook injects the queue-proxy, with its own 25m) at a
// target of 50% goes from 1 pod to several under about 10 requests a
// second (0.2 cores) through its Service, and back to 1 after the load
// and a scale-down stabilization of 20 s.
func TestHPACPU(t *testing.T) {
	ns := newNamespace(t, "node-hpa")
	d := helloCopy(t, ns, "cpu", map[string]string{
		config.AnnotationClass: config.ClassHPA, "autoscaling.knative.dev/metric": "cpu", "autoscaling.knative.dev/target": "50",
		config.AnnotationMinScale: "1", config.AnnotationMaxScale: "3",
		config.AnnotationBehavior: `{"scaleDown": {"stabilizationWindowSeconds": 20}}`,
	})
	for i, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "app" {
			d.Spec.Template.Spec.Containers[i].Image = imageRef(t, "cpuwork")
			d.Spec.Template.Spec.Containers[i].Args = []string{"--cpu=20ms"}
			d.Spec.Template.Spec.Containers[i].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
		}
	}
	createDeployment(t, d)
	waitReady(t, ns, d.Name, 1, 120*time.Second)
	addr := serviceAddr(t, ns, d.Name)
	const load = 150 * time.Second
	most := maxReady(ns, d.Name)
	start := time.Now()
	wait, _ := startHey(t, addr, host(ns, d.Name), 2, load, "-q", "5") // 2 clients of 5 a second
	up := waitState(t, ns, d.Name, load-10*time.Second, "2 or more pods ready under the cpu load", func(s state) bool { return s.ready >= 2 })
	upAfter := time.Since(start)
	r := wait()
	n := most()
	fmt.Printf("node: HPA cpu: %s %v after the load began; at most %d ready pods; load %s\n", up, upAfter.Round(time.Second), n, r)
	if !r.only200() {
		t.Errorf("the load saw other than 200s: %s", r)
	}
	ended := time.Now()
	waitState(t, ns, d.Name, 180*time.Second, "back to 1 pod after the load and the 20 s stabilization", func(s state) bool {
		return s.spec == 1 && s.ready == 1 && s.pods == 1
	})
	fmt.Printf("node: HPA cpu: back to 1 pod %v after the load ended (load average %s)\n", time.Since(ended).Round(time.Second), loadAvg())
}
