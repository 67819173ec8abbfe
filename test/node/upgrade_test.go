//go:build node

package node

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ebb.dev/ebb/pkg/config"
)

// TestUpgradeUnderLoad: the install upgraded as docs/kubernetes.md says
// (make images with a new VERSION, make deploy) while hey sends through
// the activator's Service: the autoscalers and activators roll to the new
// images and hey sees only 200s. The new images go into the node's
// containerd first, as the testbed loads make images' archives.
func TestUpgradeUnderLoad(t *testing.T) {
	if env.images == "" {
		t.Skip("EBB_IMAGES (make images' output) is not set")
	}
	ctx := context.Background()
	ns := newNamespace(t, "node-upgrade")
	d := helloCopy(t, ns, "upgrade", map[string]string{config.AnnotationWindow: "6s", "autoscaling.knative.dev/min-scale": "2"})
	createDeployment(t, d)
	waitReady(t, ns, d.Name, 2, 120*time.Second)
	version := "upgrade-" + time.Now().UTC().Format("20060102150405")
	out := filepath.Join(env.tmp, "images")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	run := func(dir, name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
		}
	}
	run(root, "make", "images", "IMAGES="+out, "VERSION="+version)
	sock := filepath.Join(os.Getenv("EBB_TESTBED_RUN_DIR"), "containerd", "containerd.sock")
	tars, _ := filepath.Glob(filepath.Join(out, "*.tar"))
	for _, f := range tars {
		run(root, "ctr", "--address", sock, "-n", "k8s.io", "images", "import", "--no-unpack", f)
	}
	const load = 60 * time.Second
	start := time.Now()
	wait := startHey(t, env.activator, host(ns, d.Name), 20, load)
	time.Sleep(5 * time.Second)
	run(root, "make", "deploy", "KUBECTL=kubectl", "IMAGES="+out, "EXAMPLE=0")
	rolled := time.Since(start) - 5*time.Second
	if time.Since(start) > load-5*time.Second {
		t.Errorf("the rollout ended %v after the load's start: not within the load (%v)", time.Since(start).Round(time.Second), load)
	}
	for _, name := range []string{config.AutoscalerName, config.ActivatorName} {
		pods, err := env.client.CoreV1().Pods(config.SystemNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && !strings.Contains(p.Spec.Containers[0].Image, ":"+version+"@") {
				t.Errorf("%s runs %s after the upgrade, want version %s", p.Name, p.Spec.Containers[0].Image, version)
			}
		}
	}
	r := wait()
	fmt.Printf("node: upgrade (make deploy, version %s) under hey 20 clients: rolled in %v; %s (load average %s)\n",
		version, rolled.Round(time.Second), r, loadAvg())
	if !r.only200() {
		t.Errorf("hey saw other than 200s during the upgrade: %s", r)
	}
}
