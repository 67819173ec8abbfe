//go:build k8s

package k8s

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"

	"ebb.dev/ebb/pkg/config"
)

// Ebb's namespace and objects, as deploy/ names them.
const (
	ebbNS          = config.SystemNamespace
	autoscalerName = config.AutoscalerName
	activatorName  = config.ActivatorName
	configName     = config.ConfigMapName
	activators     = 2 // replicas of deploy/kubernetes/activator.yaml
	autoscalers    = 2 // replicas of deploy/kubernetes/autoscaler.yaml
)

// Lease timings of the test: shorter than deploy/'s 15s/10s/2s so the
// failover test is quick.
const (
	leaseDuration = 6 * time.Second
	renewDeadline = 4 * time.Second
	retryPeriod   = time.Second
)

// learnedSaveInterval is how often the autoscaler saves the learned
// policy's state (deploy/'s default is 30s).
const learnedSaveInterval = 2 * time.Second

// stableWindow is suiteConfig's stable-window.
const stableWindow = 6 * time.Second

// suiteConfig is config-autoscaler for the tests: short windows, so a
// revision goes to zero within seconds, and zero initial scale allowed.
var suiteConfig = map[string]string{
	"stable-window":              stableWindow.String(),
	"scale-to-zero-grace-period": "6s",
	"allow-zero-initial-scale":   "true",
}

// env is the suite's shared state, set up by TestMain.
var env struct {
	client  kubernetes.Interface
	rest    *rest.Config
	kubelet *kubelet
	proxy   *forwarder // the autoscaler Service's admin port, as kube-proxy would serve it
	stats   *forwarder // its stats port (where the activators report)
	webhook *forwarder // the webhook Service's port (any autoscaler), which the API server calls
	logDir  string
}

func TestMain(m *testing.M) {
	if os.Getenv("EBB_TESTBED") != "1" {
		fmt.Println("test/k8s: skipped: these tests run inside the testbed (make test-k8s)")
		os.Exit(0)
	}
	ctx, cancel := context.WithCancel(context.Background())
	teardown, err := setUp(ctx)
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, "test/k8s: setting up Ebb on the testbed:", err)
	} else {
		code = m.Run()
	}
	teardown()
	cancel()
	if code != 0 {
		fmt.Fprintln(os.Stderr, "test/k8s: process logs (Ebb, apps, the test kubelet) are in", env.logDir)
	} else {
		os.RemoveAll(env.logDir)
	}
	os.Exit(code)
}

// setUp builds the binaries, starts the test kubelet and the autoscaler
// Service's proxy, applies deploy/ (kubectl apply -k) with the test's
// config-autoscaler, and waits for the autoscalers and the activators.
func setUp(ctx context.Context) (func(), error) {
	var err error
	teardown := func() {}
	if env.logDir, err = os.MkdirTemp("", "ebb-k8s-"); err != nil {
		return teardown, err
	}
	bins, err := binaries()
	if err != nil {
		return teardown, err
	}
	if env.rest, err = clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG")); err != nil {
		return teardown, err
	}
	env.rest.QPS, env.rest.Burst = 100, 200
	if env.client, err = kubernetes.NewForConfig(env.rest); err != nil {
		return teardown, err
	}
	if env.proxy, err = serviceProxy(env.client, ebbNS, autoscalerName, "http"); err != nil {
		return teardown, err
	}
	if env.stats, err = serviceProxy(env.client, ebbNS, autoscalerName, "stats"); err != nil {
		return teardown, err
	}
	if env.webhook, err = serviceProxy(env.client, ebbNS, webhookService, "webhook"); err != nil {
		return teardown, err
	}
	klog, err := os.Create(filepath.Join(env.logDir, "kubelet.log"))
	if err != nil {
		return teardown, err
	}
	env.kubelet = &kubelet{client: env.client, rest: env.rest, bins: bins, logDir: env.logDir,
		autoscalerURL: "http://" + env.stats.addr(), log: log.New(klog, "", log.LstdFlags|log.Lmicroseconds),
		autoscalerArg: []string{"--lease-duration=" + leaseDuration.String(), "--renew-deadline=" + renewDeadline.String(),
			"--retry-period=" + retryPeriod.String(), "--log-level=debug", "--learned-save-interval=" + learnedSaveInterval.String()},
		pods: map[types.UID]*podRun{}, kubeconfigs: map[string]string{}}
	teardown = func() {
		env.kubelet.stopAll() // before Ebb's RBAC goes
		kubectl("delete", "-k", "../../deploy", "--ignore-not-found", "--wait=false")
		env.proxy.close()
		env.stats.close()
		env.webhook.close()
		klog.Close()
	}
	if err := env.kubelet.run(ctx); err != nil {
		return teardown, err
	}
	stopMetrics, err := env.kubelet.serveResourceMetrics()
	if err != nil {
		return teardown, err
	}
	prevTeardown := teardown
	teardown = func() { stopMetrics(); prevTeardown() }
	if out, err := kubectl("apply", "-k", "../../deploy"); err != nil {
		return teardown, fmt.Errorf("kubectl apply -k deploy: %v\n%s", err, out)
	}
	if err := setConfig(ctx, suiteConfig); err != nil {
		return teardown, err
	}
	if err := setWebhookURL(ctx, webhookURL()); err != nil {
		return teardown, err
	}
	return teardown, waitForEbb(ctx)
}

// binaries builds Ebb's binaries and the sample app (or takes them from
// $EBB_BIN), keyed by the image deploy/ runs them from.
func binaries() (map[string]string, error) {
	dir := os.Getenv("EBB_BIN")
	if dir == "" {
		dir = filepath.Join(env.logDir, "bin")
		out, err := exec.Command("go", "build", "-o", dir+"/", "ebb.dev/ebb/cmd/autoscaler", "ebb.dev/ebb/cmd/activator",
			"ebb.dev/ebb/cmd/queueproxy", "ebb.dev/ebb/deploy/local/hello", "ebb.dev/ebb/deploy/local/cpuwork").CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("go build: %v\n%s", err, out)
		}
	}
	bins := map[string]string{imageAutoscaler: "autoscaler", imageActivator: "activator", imageQueueProxy: "queueproxy", imageHello: "hello", imageCPUWork: "cpuwork"}
	for image, name := range bins {
		path, err := filepath.Abs(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("binary for %s: %w (make build, or unset EBB_BIN)", image, err)
		}
		bins[image] = path
	}
	return bins, nil
}

func kubectl(args ...string) (string, error) {
	out, err := exec.Command("kubectl", args...).CombinedOutput()
	return string(out), err
}

// setConfig replaces config-autoscaler's data.
func setConfig(ctx context.Context, data map[string]string) error {
	cms := env.client.CoreV1().ConfigMaps(ebbNS)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, configName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cm.Data = map[string]string{"_example": cm.Data["_example"]}
		for k, v := range data {
			cm.Data[k] = v
		}
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
}

// waitForEbb waits for an elected leader, the buckets balanced over the
// autoscaler's replicas, every replica behind the autoscaler Service,
// the activators' endpoints, and the API.
func waitForEbb(ctx context.Context) error {
	deadline := time.Now().Add(90 * time.Second)
	var state string
	for time.Now().Before(deadline) {
		leader, _ := leaseHolder(ctx)
		pods, _ := autoscalerPods(ctx)
		v, _ := readFleet(ctx)
		addrs, _ := serviceAddrs(ctx, env.client, ebbNS, autoscalerName)
		acts, _ := serviceAddrs(ctx, env.client, ebbNS, activatorName)
		state = fmt.Sprintf("leader %q, autoscalers %v, %s, autoscaler endpoints %v, activator endpoints %v", leader, pods, v, addrs, acts)
		if leader != "" && len(pods) == autoscalers && balanced(v, pods) && len(addrs) == autoscalers && len(acts) == activators {
			if _, err := autoscalerStatuses(ctx); err == nil {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("Ebb not up within 90s: %s; see %s", state, env.logDir)
}

func leaseHolder(ctx context.Context) (string, error) {
	l, err := env.client.CoordinationV1().Leases(ebbNS).Get(ctx, autoscalerName, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return "", err
	}
	return *l.Spec.HolderIdentity, nil
}

// logTail returns the last lines of a process log, for failure messages.
func logTail(name string, lines int) string {
	data, err := os.ReadFile(filepath.Join(env.logDir, name+".log"))
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}
