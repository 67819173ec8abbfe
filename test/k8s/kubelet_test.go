//go:build k8s

package k8s

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"ebb.dev/ebb/pkg/config"
)

// Images of deploy/ and the binaries the test kubelet runs for them.
const (
	imageAutoscaler = "ebb.dev/autoscaler"
	imageActivator  = "ebb.dev/activator"
	imageQueueProxy = "ebb.dev/queueproxy"
	imageHello      = "ebb.dev/hello"
	imageCPUWork    = "ebb.dev/cpuwork"
)

// kubelet runs the containers of the testbed's pods as local processes:
// the binary of the container's image with the container's arguments and
// environment (downward API resolved), adapted to a shared network
// namespace (see adapt). It stops a pod's processes when the pod goes,
// and restarts a container that exits, as restartPolicy Always does.
type kubelet struct {
	client        kubernetes.Interface
	rest          *rest.Config
	bins          map[string]string // image (no tag) -> binary
	logDir        string
	autoscalerURL string   // AUTOSCALER_URL of the activators: the harness's proxy of the autoscaler Service
	autoscalerArg []string // extra flags of the autoscalers (shorter leases)
	log           *log.Logger

	mu          sync.Mutex // guards the maps
	pods        map[types.UID]*podRun
	kubeconfigs map[string]string // namespace/serviceaccount -> kubeconfig file
}

// podRun is one pod's processes and forwarders.
type podRun struct {
	pod         *corev1.Pod
	procs       []*proc
	fwds        []*forwarder
	terminating bool // guarded by kubelet.mu
}

func (k *kubelet) run(ctx context.Context) error {
	f := informers.NewSharedInformerFactory(k.client, 0)
	inf := f.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.sync(ctx, obj.(*corev1.Pod)) },
		UpdateFunc: func(_, obj any) { k.sync(ctx, obj.(*corev1.Pod)) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			k.stopPod(obj.(*corev1.Pod).UID)
		},
	})
	if err != nil {
		return err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("test kubelet: pod cache not synced")
	}
	return nil
}

// sync starts or stops a pod's processes. Events come in order from one
// goroutine, so a deleted pod's forwarders are closed before a new pod
// with the same address (kwok reuses them at once) starts.
func (k *kubelet) sync(ctx context.Context, pod *corev1.Pod) {
	if pod.DeletionTimestamp != nil {
		k.terminate(pod)
		return
	}
	if pod.Status.PodIP == "" || pod.Status.Phase != corev1.PodRunning {
		return
	}
	k.mu.Lock()
	_, running := k.pods[pod.UID]
	k.mu.Unlock()
	if running {
		return
	}
	run, err := k.startPod(ctx, pod)
	if err != nil {
		k.log.Printf("pod %s/%s: not started: %v", pod.Namespace, pod.Name, err)
		return
	}
	if run == nil {
		return // not one of ours
	}
	k.mu.Lock()
	k.pods[pod.UID] = run
	k.mu.Unlock()
	k.log.Printf("pod %s/%s (%s): started %d processes", pod.Namespace, pod.Name, pod.Status.PodIP, len(run.procs))
}

func imageName(image string) string {
	image, _, _ = strings.Cut(image, "@") // NAME[:TAG]@DIGEST
	if i := strings.LastIndexByte(image, ':'); i > strings.LastIndexByte(image, '/') {
		return image[:i]
	}
	return image
}

// startPod starts the pod's containers, or returns nil when an image is
// not one the kubelet knows (the testbed's own pods).
func (k *kubelet) startPod(ctx context.Context, pod *corev1.Pod) (*podRun, error) {
	for _, c := range pod.Spec.Containers {
		if k.bins[imageName(c.Image)] == "" {
			return nil, nil
		}
	}
	ports, err := freePorts(3) // queue-proxy serving, admin; app
	if err != nil {
		return nil, err
	}
	run := &podRun{pod: pod}
	for _, c := range pod.Spec.Containers {
		p, fwds, err := k.container(ctx, pod, c, ports)
		if err != nil {
			run.stop(false)
			return nil, fmt.Errorf("container %s: %w", c.Name, err)
		}
		run.fwds = append(run.fwds, fwds...)
		run.procs = append(run.procs, p)
	}
	for _, p := range run.procs {
		p.start()
	}
	return run, nil
}

// container prepares one container's process and forwarders.
func (k *kubelet) container(ctx context.Context, pod *corev1.Pod, c corev1.Container, ports []int) (*proc, []*forwarder, error) {
	secret := func(ns, name string) (*corev1.Secret, error) {
		return k.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	}
	env, order, err := containerEnv(pod, c, secret)
	if err != nil {
		return nil, nil, err
	}
	image := imageName(c.Image)
	argv := append(append([]string{k.bins[image]}, c.Command...), c.Args...)
	ip := pod.Status.PodIP
	var fwds []*forwarder
	set := func(kv ...string) {
		for i := 0; i < len(kv); i += 2 {
			if _, ok := env[kv[i]]; !ok {
				order = append(order, kv[i])
			}
			env[kv[i]] = kv[i+1]
		}
	}
	switch image {
	case imageAutoscaler:
		kc, err := k.kubeconfig(ctx, pod.Namespace, pod.Spec.ServiceAccountName)
		if err != nil {
			return nil, nil, err
		}
		set("KUBECONFIG", kc)
		// The webhook on the pod's address too; the API server reaches it
		// through the harness's forwarder on 127.0.0.1 (no kube-proxy), so
		// that is the certificate's name.
		argv = append(append(argv, "--admin="+net.JoinHostPort(ip, itoa(config.AutoscalerAdminPort)), "--stats="+net.JoinHostPort(ip, itoa(config.AutoscalerStatsPort)),
			"--webhook="+net.JoinHostPort(ip, itoa(config.WebhookPort)), "--webhook-hosts=127.0.0.1"), k.autoscalerArg...)
	case imageActivator:
		kc, err := k.kubeconfig(ctx, pod.Namespace, pod.Spec.ServiceAccountName)
		if err != nil {
			return nil, nil, err
		}
		set("KUBECONFIG", kc, "ACTIVATOR_ADDRESS", net.JoinHostPort(ip, itoa(config.ActivatorPort)),
			"ACTIVATOR_ADMIN_ADDRESS", net.JoinHostPort(ip, itoa(config.ActivatorAdminPort)), config.EnvAutoscalerURL, k.autoscalerURL)
		if err := k.projectTokens(ctx, pod, c, env); err != nil {
			return nil, nil, err
		}
	case imageQueueProxy:
		set(config.EnvQueueServingPort, itoa(ports[0]), config.EnvQueueAdminPort, itoa(ports[1]), config.EnvUserPort, itoa(ports[2]),
			config.EnvDrainPeriod, "1")
		for i, port := range []int{config.QueueServingPort, config.QueueAdminPort} {
			to := "127.0.0.1:" + itoa(ports[i])
			f, err := forward(net.JoinHostPort(ip, itoa(port)), func() ([]string, error) { return []string{to}, nil })
			if err != nil {
				for _, f := range fwds {
					f.close()
				}
				return nil, nil, err
			}
			fwds = append(fwds, f)
		}
	case imageHello:
		set(config.EnvPort, itoa(ports[2]))
	case imageCPUWork: // a sidecarless app: serves the pod's 8080 itself
		set(config.EnvPort, itoa(ports[2]))
		to := "127.0.0.1:" + itoa(ports[2])
		f, err := forward(net.JoinHostPort(ip, "8080"), func() ([]string, error) { return []string{to}, nil })
		if err != nil {
			return nil, nil, err
		}
		fwds = append(fwds, f)
	}
	vars := make([]string, 0, len(order))
	for _, n := range order {
		vars = append(vars, n+"="+env[n])
	}
	name := pod.Namespace + "_" + pod.Name + "_" + c.Name
	p := &proc{name: name, argv: argv, env: vars, logPath: filepath.Join(k.logDir, name+".log"), log: k.log,
		direct: image == imageAutoscaler || image == imageActivator}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
		// The test's queue-proxies drain for 1s (DRAIN_PERIOD_SECONDS);
		// a longer preStop sleep would only slow the tests.
		p.preStop = min(time.Duration(c.Lifecycle.PreStop.Sleep.Seconds)*time.Second, 2*time.Second)
	}
	return p, fwds, nil
}

// projectTokens plays the kubelet's projected serviceAccountToken volumes
// for a container: a token of the pod's ServiceAccount with the volume's
// audience, bound to the pod, written under the log directory; and its
// Secret volumes (secretVolume); the container's environment values under
// the mount path are pointed there.
func (k *kubelet) projectTokens(ctx context.Context, pod *corev1.Pod, c corev1.Container, env map[string]string) error {
	for _, m := range c.VolumeMounts {
		for _, v := range pod.Spec.Volumes {
			if v.Name != m.Name || (v.Projected == nil && v.Secret == nil) {
				continue
			}
			dir := filepath.Join(k.logDir, "volumes", pod.Namespace+"_"+pod.Name, v.Name)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return err
			}
			if v.Secret != nil {
				go k.secretVolume(ctx, pod.Namespace, v.Secret, dir)
				repoint(env, m.MountPath, dir)
				continue
			}
			for _, src := range v.Projected.Sources {
				if sa := src.ServiceAccountToken; sa != nil {
					if err := k.writeToken(ctx, pod, sa, filepath.Join(dir, sa.Path)); err != nil {
						return err
					}
				}
			}
			repoint(env, m.MountPath, dir)
		}
	}
	return nil
}

// repoint points the environment values under a mount path at the
// volume's directory.
func repoint(env map[string]string, mountPath, dir string) {
	for name, val := range env {
		if rest, ok := strings.CutPrefix(val, mountPath); ok {
			env[name] = dir + rest
		}
	}
}

// secretVolume plays the kubelet's Secret volume: the Secret's keys (or
// the volume's items) as files in dir, written once the Secret exists
// (a container started before finds no file, exits, and is restarted, as
// the kubelet would not have started it).
func (k *kubelet) secretVolume(ctx context.Context, ns string, v *corev1.SecretVolumeSource, dir string) {
	for {
		s, err := k.client.CoreV1().Secrets(ns).Get(ctx, v.SecretName, metav1.GetOptions{})
		if err == nil {
			files := map[string]string{}
			for key := range s.Data {
				files[key] = key
			}
			if len(v.Items) > 0 {
				files = map[string]string{}
				for _, it := range v.Items {
					files[it.Key] = it.Path
				}
			}
			for key, path := range files {
				if werr := os.WriteFile(filepath.Join(dir, path), s.Data[key], 0o600); werr != nil {
					k.log.Printf("secret volume %s/%s: %v", ns, v.SecretName, werr)
				}
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// writeToken writes a bound token of the pod's ServiceAccount.
func (k *kubelet) writeToken(ctx context.Context, pod *corev1.Pod, src *corev1.ServiceAccountTokenProjection, path string) error {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	req := &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{
		ExpirationSeconds: src.ExpirationSeconds,
		BoundObjectRef:    &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	tok, err := k.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("projected token for pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return os.WriteFile(path, []byte(tok.Status.Token), 0o600)
}

// kubeconfig writes (once) a kubeconfig that authenticates as the
// ServiceAccount with a token from the TokenRequest API: Ebb runs with
// exactly the RBAC of deploy/.
func (k *kubelet) kubeconfig(ctx context.Context, ns, sa string) (string, error) {
	if sa == "" {
		sa = "default"
	}
	key := ns + "/" + sa
	k.mu.Lock()
	path, ok := k.kubeconfigs[key]
	k.mu.Unlock()
	if ok {
		return path, nil
	}
	tok, err := k.client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(7200))}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for %s: %w", key, err)
	}
	path = filepath.Join(k.logDir, "kubeconfig-"+ns+"-"+sa)
	if err := os.WriteFile(path, []byte(tokenKubeconfig(k.rest, tok.Status.Token)), 0o600); err != nil {
		return "", err
	}
	k.mu.Lock()
	k.kubeconfigs[key] = path
	k.mu.Unlock()
	return path, nil
}

func tokenKubeconfig(cfg *rest.Config, token string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: testbed
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: sa
  user:
    token: %s
contexts:
- name: sa
  context: {cluster: testbed, user: sa}
current-context: sa
`, cfg.Host, base64(cfg.CAData), token)
}

// terminate ends a pod marked for deletion as a kubelet does: each
// container's preStop sleep, then SIGTERM, up to the grace period (capped
// at 15s here), then SIGKILL; the pod keeps its address and forwarders
// meanwhile (the queue-proxy drains). Then it deletes the pod for good
// (grace period 0). Only with the testbed's graceful deletion
// (EBB_TESTBED_GRACEFUL_DELETE=1) does a pod stay Terminating long enough.
func (k *kubelet) terminate(pod *corev1.Pod) {
	k.mu.Lock()
	run, ok := k.pods[pod.UID]
	if !ok || run.terminating {
		k.mu.Unlock()
		return
	}
	run.terminating = true
	k.mu.Unlock()
	grace := 30 * time.Second
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	grace = min(grace, 15*time.Second)
	k.log.Printf("pod %s/%s: terminating (grace %v)", pod.Namespace, pod.Name, grace)
	go func() {
		var wg sync.WaitGroup
		for _, p := range run.procs {
			wg.Go(func() { p.terminate(grace) })
		}
		wg.Wait()
		for _, f := range run.fwds {
			f.close()
		}
		k.mu.Lock()
		delete(k.pods, pod.UID)
		k.mu.Unlock()
		err := k.client.CoreV1().Pods(pod.Namespace).Delete(context.Background(), pod.Name,
			metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0)), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		k.log.Printf("pod %s/%s: terminated (%v)", pod.Namespace, pod.Name, err)
	}()
}

// stopPod stops a pod's processes: its forwarders at once, so its address
// is free for the next pod; processes that bind the address themselves
// (autoscaler, activator) are waited for.
func (k *kubelet) stopPod(uid types.UID) {
	k.mu.Lock()
	run, ok := k.pods[uid]
	delete(k.pods, uid)
	k.mu.Unlock()
	if ok {
		k.log.Printf("pod %s/%s: stopping", run.pod.Namespace, run.pod.Name)
		run.stop(true)
	}
}

func (r *podRun) stop(graceful bool) {
	for _, f := range r.fwds {
		f.close()
	}
	var wg sync.WaitGroup
	for _, p := range r.procs {
		wg.Go(func() { p.stop(graceful) })
	}
	for _, p := range r.procs {
		if p.direct {
			wg.Wait()
			return
		}
	}
	go wg.Wait()
}

// stopAll stops every pod's processes (the end of the suite).
func (k *kubelet) stopAll() {
	k.mu.Lock()
	runs := k.pods
	k.pods = map[types.UID]*podRun{}
	k.mu.Unlock()
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Go(func() {
			for _, f := range r.fwds {
				f.close()
			}
			for _, p := range r.procs {
				p.stop(false)
			}
		})
	}
	wg.Wait()
}

// process finds a pod's container process by pod name prefix and
// container name.
func (k *kubelet) process(ns, pod, container string) *proc {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, r := range k.pods {
		if r.pod.Namespace == ns && r.pod.Name == pod {
			for i, c := range r.pod.Spec.Containers {
				if c.Name == container {
					return r.procs[i]
				}
			}
		}
	}
	return nil
}
