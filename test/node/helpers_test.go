//go:build node

package node

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"

	"ebb.dev/ebb/pkg/config"
)

// env is the suite's shared state, set up by TestMain.
var env struct {
	client    kubernetes.Interface
	activator string // the activator Service's ClusterIP:port, as a pod dials it
	hey       string // hey, built from go.mod's tool
	images    string // make images' output (EBB_IMAGES)
	tmp       string
}

func TestMain(m *testing.M) {
	if os.Getenv("EBB_TESTBED") != "1" || os.Getenv("EBB_TESTBED_REAL_NODE") == "" {
		fmt.Println("test/node: skipped: these tests run inside the testbed with its real node (make test-node)")
		os.Exit(0)
	}
	code := 1
	if err := setUp(); err != nil {
		fmt.Fprintln(os.Stderr, "test/node: setting up:", err)
	} else {
		code = m.Run()
	}
	if err := setConfigKeys(context.Background(), suiteRestore); err != nil {
		fmt.Fprintln(os.Stderr, "test/node: putting config-autoscaler back:", err)
	}
	os.RemoveAll(env.tmp)
	os.Exit(code)
}

// setUp makes the clientset from the testbed's kubeconfig, builds hey and
// waits until the activator's Service answers (kube-proxy has its rules).
// Ebb is installed already: make test-node runs make deploy first.
func setUp() error {
	var err error
	if env.tmp, err = os.MkdirTemp("", "ebb-node-"); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 50, 100
	if env.client, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	env.images = os.Getenv("EBB_IMAGES")
	env.hey = filepath.Join(env.tmp, "hey")
	if out, err := exec.Command("go", "build", "-o", env.hey, "github.com/rakyll/hey").CombinedOutput(); err != nil {
		return fmt.Errorf("building hey (go.mod's tool): %v\n%s", err, out)
	}
	ctx := context.Background()
	// Set once for the suite: a change of config-autoscaler restarts every
	// revision's decider.
	if suiteRestore, err = configKeys(ctx, suiteConfig); err != nil {
		return err
	}
	if err := setConfigKeys(ctx, suiteConfig); err != nil {
		return err
	}
	svc, err := env.client.CoreV1().Services(config.SystemNamespace).Get(ctx, config.ActivatorName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("the activator's Service (make deploy first): %w", err)
	}
	env.activator = net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port)))
	deadline := time.Now().Add(60 * time.Second)
	for {
		// A host Ebb does not know: any answer shows the route works.
		code, _, err := get(ctx, env.activator, "unknown.invalid", 2*time.Second)
		if err == nil {
			_ = code
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the activator's Service %s did not answer within 60 s: %v", env.activator, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitFor polls cond every 100 ms until it holds, or fails the test after
// timeout with what and cond's last description of the state.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; last seen: %s", what, timeout, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// newNamespace creates a namespace for one test, deleted at its end.
func newNamespace(t *testing.T, name string) string {
	t.Helper()
	// One of an earlier run may still be going.
	waitFor(t, 120*time.Second, "namespace "+name+" created", func() (bool, string) {
		_, err := env.client.CoreV1().Namespaces().Create(context.Background(),
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return false, err.Error()
		}
		if err != nil {
			t.Fatal(err)
		}
		return true, ""
	})
	t.Cleanup(func() {
		env.client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// helloCopy is the example app make deploy installed (default/hello: the
// short form, the webhook injects the queue-proxy), as the Deployment
// name in ns, at zero, with the pod-template annotations ann added (an
// empty value removes one).
func helloCopy(t *testing.T, ns, name string, ann map[string]string) *appsv1.Deployment {
	t.Helper()
	src, err := env.client.AppsV1().Deployments("default").Get(context.Background(), "hello", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the example app make deploy installs: %v", err)
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: src.Labels},
		Spec:       *src.Spec.DeepCopy(),
	}
	d.Spec.Replicas = new(int32)
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
	d.Spec.Template.Labels = map[string]string{"app": name, config.LabelEnabled: "true"}
	if d.Spec.Template.Annotations == nil {
		d.Spec.Template.Annotations = map[string]string{}
	}
	for k, v := range ann {
		if v == "" {
			delete(d.Spec.Template.Annotations, k)
		} else {
			d.Spec.Template.Annotations[k] = v
		}
	}
	return d
}

func createDeployment(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	if _, err := env.client.AppsV1().Deployments(d.Namespace).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// updateAnnotations changes a Deployment's pod-template annotations (an
// empty value removes one), again on a conflict (the autoscaler scales
// the Deployment meanwhile).
func updateAnnotations(t *testing.T, ns, name string, ann map[string]string) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := env.client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for k, v := range ann {
			if v == "" {
				delete(d.Spec.Template.Annotations, k)
			} else {
				d.Spec.Template.Annotations[k] = v
			}
		}
		_, err = env.client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// suiteConfig is config-autoscaler for the suite: a short grace period,
// so that a revision whose stable window is short (fastToZero) is back
// at zero within seconds (Ebb scales to zero only once the activators
// are in the Service's path, whatever the grace period).
var suiteConfig = map[string]string{"scale-to-zero-grace-period": "2s"}

// suiteRestore is what suiteConfig replaced (nil: the key was unset).
var suiteRestore map[string]*string

// configKeys reads the values of config-autoscaler's keys (nil: unset).
func configKeys(ctx context.Context, keys map[string]string) (map[string]*string, error) {
	cm, err := env.client.CoreV1().ConfigMaps(config.SystemNamespace).Get(ctx, config.ConfigMapName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	old := map[string]*string{}
	for k := range keys {
		old[k] = nil
		if v, ok := cm.Data[k]; ok {
			old[k] = &v
		}
	}
	return old, nil
}

// setConfigKeys sets config-autoscaler's keys (a map[string]string) or
// sets and removes them (a map[string]*string; nil removes).
func setConfigKeys[V string | *string](ctx context.Context, data map[string]V) error {
	cms := env.client.CoreV1().ConfigMaps(config.SystemNamespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, config.ConfigMapName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		for k, v := range data {
			switch v := any(v).(type) {
			case string:
				cm.Data[k] = v
			case *string:
				if v == nil {
					delete(cm.Data, k)
				} else {
					cm.Data[k] = *v
				}
			}
		}
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
}

// state is a Deployment's replicas as written (spec) and its pods: how
// many exist, how many are Running and Ready.
type state struct {
	spec, pods, ready int
}

func (s state) String() string {
	return fmt.Sprintf("spec.replicas %d, %d pods, %d ready", s.spec, s.pods, s.ready)
}

func stateOf(ctx context.Context, ns, name string) (state, error) {
	s := state{spec: -1}
	d, err := env.client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return s, err
	}
	if d.Spec.Replicas != nil {
		s.spec = int(*d.Spec.Replicas)
	}
	pods, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labelSelector(d)})
	if err != nil {
		return s, err
	}
	s.pods = len(pods.Items)
	for i := range pods.Items {
		if podReady(&pods.Items[i]) && pods.Items[i].DeletionTimestamp == nil {
			s.ready++
		}
	}
	return s, nil
}

func labelSelector(d *appsv1.Deployment) string {
	var sel []string
	for k, v := range d.Spec.Selector.MatchLabels {
		sel = append(sel, k+"="+v)
	}
	sort.Strings(sel)
	return strings.Join(sel, ",")
}

func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitState waits until the Deployment's state satisfies ok.
func waitState(t *testing.T, ns, name string, timeout time.Duration, what string, ok func(state) bool) state {
	t.Helper()
	var last state
	waitFor(t, timeout, fmt.Sprintf("%s/%s: %s", ns, name, what), func() (bool, string) {
		s, err := stateOf(context.Background(), ns, name)
		if err != nil {
			return false, err.Error()
		}
		last = s
		return ok(s), s.String()
	})
	return last
}

// waitZero waits until the Deployment is at zero with no pod left.
func waitZero(t *testing.T, ns, name string, timeout time.Duration) {
	t.Helper()
	waitState(t, ns, name, timeout, "at zero with no pod", func(s state) bool { return s.spec == 0 && s.pods == 0 })
}

// waitReady waits until exactly n pods are ready, n written and no other
// pod is left.
func waitReady(t *testing.T, ns, name string, n int, timeout time.Duration) {
	t.Helper()
	waitState(t, ns, name, timeout, fmt.Sprintf("%d ready pods and no other", n),
		func(s state) bool { return s.spec == n && s.ready == n && s.pods == n })
}

// serviceAddr is the ClusterIP:port of a Service.
func serviceAddr(t *testing.T, ns, name string) string {
	t.Helper()
	svc, err := env.client.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port)))
}

// host is the Host header of a revision's requests (the Service's name).
func host(ns, name string) string { return name + "." + ns + ".svc" }

// get sends GET / with Host host to addr on a new connection and returns
// the status code and the time from sending to the response's first byte.
func get(ctx context.Context, addr, host string, timeout time.Duration) (int, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
	if err != nil {
		return 0, 0, err
	}
	req.Host = host
	var sent, first time.Time
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest:         func(httptrace.WroteRequestInfo) { sent = time.Now() },
		GotFirstResponseByte: func() { first = time.Now() },
	}))
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, first.Sub(sent), nil
}

// heyResult is what hey reported: responses by status code, and errors
// (a request that got no response) by message.
type heyResult struct {
	codes  map[int]int
	errors map[string]int
	out    string
}

func (r heyResult) total() int {
	n := 0
	for _, c := range r.codes {
		n += c
	}
	for _, c := range r.errors {
		n += c
	}
	return n
}

// only200 says whether every request got a 200.
func (r heyResult) only200() bool {
	return len(r.errors) == 0 && len(r.codes) == 1 && r.codes[200] > 0
}

func (r heyResult) String() string {
	var parts []string
	for c, n := range r.codes {
		parts = append(parts, fmt.Sprintf("[%d] %d", c, n))
	}
	sort.Strings(parts)
	for e, n := range r.errors {
		parts = append(parts, fmt.Sprintf("error %d× %s", n, e))
	}
	return strings.Join(parts, ", ")
}

var (
	heyCode  = regexp.MustCompile(`^\s+\[(\d+)\]\s+(\d+) responses`)
	heyError = regexp.MustCompile(`^\s+\[(\d+)\]\s+(.*)$`)
)

// runHey runs hey for d with c clients on the revision host through addr
// and parses its summary.
func runHey(t *testing.T, addr, host string, c int, d time.Duration, extra ...string) heyResult {
	t.Helper()
	args := append([]string{"-z", d.String(), "-c", strconv.Itoa(c), "-host", host}, extra...)
	args = append(args, "http://"+addr+"/")
	out, err := exec.Command(env.hey, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("hey %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	r := parseHey(string(out))
	if r.total() == 0 {
		t.Fatalf("hey answered nothing:\n%s", out)
	}
	return r
}

// startHey runs runHey in the background; wait waits for it and returns
// its summary; stop ends it early (SIGINT: hey stops and reports).
func startHey(t *testing.T, addr, host string, c int, d time.Duration, extra ...string) (wait func() heyResult, stop func()) {
	t.Helper()
	args := append([]string{"-z", d.String(), "-c", strconv.Itoa(c), "-host", host}, extra...)
	args = append(args, "http://"+addr+"/")
	cmd := exec.Command(env.hey, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var once sync.Once
	var r heyResult
	wait = func() heyResult {
		once.Do(func() {
			if err := <-done; err != nil {
				t.Fatalf("hey %s: %v\n%s", strings.Join(args, " "), err, out.String())
			}
			r = parseHey(out.String())
		})
		if r.total() == 0 {
			t.Fatalf("hey answered nothing:\n%s", r.out)
		}
		return r
	}
	stop = func() { cmd.Process.Signal(os.Interrupt) }
	t.Cleanup(func() { cmd.Process.Kill() })
	return wait, stop
}

func parseHey(out string) heyResult {
	r := heyResult{codes: map[int]int{}, errors: map[string]int{}, out: out}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "Status code distribution:"):
			section = "codes"
			continue
		case strings.HasPrefix(line, "Error distribution:"):
			section = "errors"
			continue
		case line != "" && !strings.HasPrefix(line, " "):
			section = ""
		}
		switch section {
		case "codes":
			if m := heyCode.FindStringSubmatch(line); m != nil {
				c, _ := strconv.Atoi(m[1])
				n, _ := strconv.Atoi(m[2])
				r.codes[c] += n
			}
		case "errors":
			if m := heyError.FindStringSubmatch(line); m != nil {
				n, _ := strconv.Atoi(m[1])
				r.errors[m[2]] += n
			}
		}
	}
	return r
}

// podLog is what a watch saw happen to one pod, each at the local time
// the event arrived (ms resolution; the API's own timestamps are
// whole seconds).
type podLog struct {
	name                                      string
	added, scheduled, started, ready, deleted time.Time
}

// deployLog is what a watch saw of a Deployment's spec.replicas: each
// value with the local time it arrived.
type scaleEvent struct {
	at       time.Time
	replicas int
}

// watcher watches a namespace's pods and Deployments, recording the
// local time of each transition.
type watcher struct {
	mu     sync.Mutex
	pods   map[string]*podLog
	scales map[string][]scaleEvent // by Deployment
	stop   func()
}

// watchNamespace starts a watcher of ns; it stops at the test's end.
func watchNamespace(t *testing.T, ns string) *watcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{pods: map[string]*podLog{}, scales: map[string][]scaleEvent{}, stop: cancel}
	pw, err := env.client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dw, err := env.client.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev := range pw.ResultChan() {
			now := time.Now()
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			w.pod(now, ev.Type, p)
		}
	}()
	go func() {
		for ev := range dw.ResultChan() {
			now := time.Now()
			d, ok := ev.Object.(*appsv1.Deployment)
			if !ok || d.Spec.Replicas == nil {
				continue
			}
			w.mu.Lock()
			s := w.scales[d.Name]
			if n := int(*d.Spec.Replicas); len(s) == 0 || s[len(s)-1].replicas != n {
				w.scales[d.Name] = append(s, scaleEvent{at: now, replicas: n})
			}
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); pw.Stop(); dw.Stop() })
	return w
}

func (w *watcher) pod(now time.Time, typ watch.EventType, p *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.pods[p.Name]
	if l == nil {
		l = &podLog{name: p.Name, added: now}
		w.pods[p.Name] = l
	}
	if l.scheduled.IsZero() && p.Spec.NodeName != "" {
		l.scheduled = now
	}
	if l.started.IsZero() && len(p.Status.ContainerStatuses) == len(p.Spec.Containers) {
		all := true
		for _, c := range p.Status.ContainerStatuses {
			all = all && c.State.Running != nil
		}
		if all {
			l.started = now
		}
	}
	if l.ready.IsZero() && podReady(p) {
		l.ready = now
	}
	if l.deleted.IsZero() && (typ == watch.Deleted || p.DeletionTimestamp != nil) {
		l.deleted = now
	}
}

// firstScaleUp is the first time after t the Deployment was seen written
// above zero.
func (w *watcher) firstScaleUp(name string, after time.Time) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.scales[name] {
		if s.at.After(after) && s.replicas > 0 {
			return s.at
		}
	}
	return time.Time{}
}

// podsAddedAfter are copies of the logs of the pods first seen after t.
func (w *watcher) podsAddedAfter(t time.Time) []podLog {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []podLog
	for _, l := range w.pods {
		if l.added.After(t) {
			out = append(out, *l)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].added.Before(out[j].added) })
	return out
}

// percentile is the p-th percentile (0..100) of ds, nearest rank.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s))*p/100+0.999999) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(s) {
		i = len(s) - 1
	}
	return s[i]
}

// loadAvg is /proc/loadavg's first three fields, for the numbers' context.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// logLine is one JSON log line of Ebb's pods: its time (the activator's
// "ts", epoch seconds with µs; the autoscaler's ISO 8601 "timestamp", ms),
// message and fields.
type logLine struct {
	at     time.Time
	msg    string
	fields map[string]any
}

// ebbLogs are the log lines of the pods of Ebb's Deployment name (the
// activators' or the autoscalers') since t, read through the kubelet.
func ebbLogs(t *testing.T, name string, since time.Time) []logLine {
	t.Helper()
	ctx := context.Background()
	pods, err := env.client.CoreV1().Pods(config.SystemNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		t.Fatal(err)
	}
	st := metav1.NewTime(since.Add(-time.Second))
	var out []logLine
	for _, p := range pods.Items {
		b, err := env.client.CoreV1().Pods(config.SystemNamespace).GetLogs(p.Name, &corev1.PodLogOptions{SinceTime: &st}).DoRaw(ctx)
		if err != nil {
			t.Logf("logs of %s: %v", p.Name, err)
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) != nil {
				continue
			}
			l := logLine{fields: m}
			if ts, ok := m["ts"].(float64); ok {
				l.at = time.Unix(0, int64(ts*1e9))
			} else if s, ok := m["timestamp"].(string); ok {
				l.at, _ = time.Parse("2006-01-02T15:04:05.000Z0700", s)
			}
			l.msg, _ = m["msg"].(string)
			if l.msg == "" {
				l.msg, _ = m["message"].(string)
			}
			if !l.at.Before(since) {
				out = append(out, l)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}

// firstLog is the first line with message msg whose fields include want.
func firstLog(lines []logLine, msg string, want map[string]any) (logLine, bool) {
next:
	for _, l := range lines {
		if l.msg != msg {
			continue
		}
		for k, v := range want {
			if fmt.Sprint(l.fields[k]) != fmt.Sprint(v) {
				continue next
			}
		}
		return l, true
	}
	return logLine{}, false
}

// toZeroNow waits until the autoscaler has scaled the Deployment to zero,
// then deletes its terminating pods at once (grace period 0), so that the
// next wake starts on a quiet node: the tests that measure a wake do not
// need the drain (no request is in flight).
func toZeroNow(t *testing.T, ns, name string, timeout time.Duration) {
	t.Helper()
	waitState(t, ns, name, timeout, "written to zero", func(s state) bool { return s.spec == 0 })
	ctx := context.Background()
	pods, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		env.client.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	}
	waitZero(t, ns, name, timeout)
}

// appArgs sets the args of the Deployment's app container (hello's
// --latency, for one).
func appArgs(t *testing.T, d *appsv1.Deployment, args ...string) {
	t.Helper()
	for i, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "app" {
			d.Spec.Template.Spec.Containers[i].Args = args
			return
		}
	}
	t.Fatalf("%s/%s has no container app", d.Namespace, d.Name)
}

// maxReady samples the Deployment's ready pods every 200 ms until stop is
// called, which returns the most seen.
func maxReady(ns, name string) (stop func() int) {
	done := make(chan struct{})
	res := make(chan int, 1)
	go func() {
		most := 0
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			if s, err := stateOf(context.Background(), ns, name); err == nil && s.ready > most {
				most = s.ready
			}
			select {
			case <-done:
				res <- most
				return
			case <-tick.C:
			}
		}
	}()
	return func() int { close(done); return <-res }
}

// reportStuck prints the activators' lines since t that name a request
// held long (a "slow request": its stage, replica, times) or a connect
// to a replica that timed out, and the packets kube-proxy's rule dropped
// as conntrack INVALID since invalidBefore (kubeProxyInvalidDrops), so
// that a client's timeout (hey's 20 s) in a test's output comes with
// where the request was held, if it was in an activator, and whether the
// node dropped packets of open connections.
func reportStuck(t *testing.T, since time.Time, invalidBefore float64) {
	t.Helper()
	for _, l := range ebbLogs(t, config.ActivatorName, since) {
		if l.msg == "slow request" || strings.HasPrefix(l.msg, "connecting to a replica timed out") {
			fmt.Printf("node: activator %s: %s %v\n", l.at.Format("15:04:05.000"), l.msg, l.fields)
		}
	}
	if after := kubeProxyInvalidDrops(); invalidBefore >= 0 && after > invalidBefore {
		fmt.Printf("node: kube-proxy dropped %v packets as conntrack INVALID meanwhile (its KUBE-FORWARD rule)\n", after-invalidBefore)
	}
}

// kubeProxyInvalidDrops is kube-proxy's count of packets its KUBE-FORWARD
// rule dropped as conntrack INVALID (a packet of a connection conntrack
// lost track of, a SYN on a 4-tuple it holds open), from its metrics on
// the testbed's 127.0.0.1:10249; -1 when it cannot be read.
func kubeProxyInvalidDrops() float64 {
	c := http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get("http://127.0.0.1:10249/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "kubeproxy_iptables_ct_state_invalid_dropped_packets_total "); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				return f
			}
		}
	}
	return -1
}
