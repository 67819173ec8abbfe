//go:build k8s

package k8s

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
	kplat "ebb.dev/ebb/pkg/platform/kubernetes/reconciler"
)

// waveSize is the revisions TestWave wakes at once: EBB_WAVE, else
// defaultWave. Issue 41 asks for 2,000; make test-k8s runs 500, which the
// 2-core testbed holds at a load average of 15 in under 2 minutes
// (docs/kubernetes.md, TestWave, has the runs at 1,000 and 2,000).
func waveSize(t *testing.T) int {
	s := os.Getenv("EBB_WAVE")
	if s == "" {
		return defaultWave
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 10 {
		t.Fatalf("EBB_WAVE=%q: want a count of revisions, at least 10", s)
	}
	return n
}

const defaultWave = 500

// waveTimeout is the revisions' REVISION_TIMEOUT_SECONDS in TestWave: how
// long the activator holds a request for a revision whose pod cannot be
// placed before it answers.
const waveTimeout = 15 * time.Second

// TestWave: a wave of revisions woken at once on a fleet of three
// autoscalers (issue 41). The revisions are opted in at zero with a
// nodeSelector no node has, so a wake makes the whole decider path run
// (the activator holds the request and reports, the holder of the
// revision's bucket scales it 0 → 1 through the fenced writes' budget)
// without an app running for each on the testbed; the pods stay Pending. One
// request per revision, all at once, through the activators: the real
// way a revision wakes, reports accepted only from the activators.
//
//   - The API server's audit log: every revision's scale written (tried)
//     by one replica only, and written at all: nothing changes the fleet
//     during the wave, and a wave of writes must not make a healthy
//     replica lose a bucket.
//   - None stranded: each revision's first scale write comes within the
//     wave's bound: the writes' budget drains the largest replica's share
//     (cluster.WritesQPS a second, shared with the wake's other writes:
//     the unschedulable Event and status) plus a tick and the liveness
//     bound of docs/kubernetes.md's model (22.55 s) as margin.
//   - Every request answered by the activator: 200, or 503/504 when it
//     gave up on a pod that cannot be placed, within the revision's
//     timeout plus a margin; no request lost.
func TestWave(t *testing.T) {
	ctx := context.Background()
	n := waveSize(t)
	began := time.Now()
	ns := newNamespace(t, "wave")

	first, err := autoscalerPods(ctx)
	if err != nil || len(first) != autoscalers {
		t.Fatalf("autoscaler pods %v (%v), want %d", first, err, autoscalers)
	}
	three := fleetOfThree(t, ctx, first, 240*time.Second, func() {
		// The wave's revisions go first: a thousand Pending pods keep the
		// controller-manager from removing the third replica in time.
		// The API server may answer a timeout while it goes on deleting.
		err := env.client.AppsV1().Deployments(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
		if err != nil {
			t.Logf("deleting the wave's revisions: %v", err)
		}
	})
	fleet := waitBalanced(t, ctx, 30*time.Second, three)
	t.Logf("3 replicas hold %v", fleet.load())

	names := createWave(t, ns, n)
	created := time.Now()
	waitFor(t, 9*time.Minute, fmt.Sprintf("%d revisions behind the activators", n), func() (bool, string) {
		left := notBehindActivators(ctx, ns, names)
		return len(left) == 0, fmt.Sprintf("%d left, e.g. %v", len(left), left[:min(3, len(left))])
	})
	t.Logf("%d revisions created and behind the activators in %v", n, time.Since(created).Round(100*time.Millisecond))

	// The wave: one request per revision, all at once.
	acts, err := serviceAddrs(ctx, env.client, ebbNS, activatorName)
	if err != nil || len(acts) == 0 {
		t.Fatalf("activators %v: %v", acts, err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: n, IdleConnTimeout: 5 * time.Second}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: waveTimeout + 15*time.Second}
	codes := make([]int, n)
	errs := make([]error, n)
	took := make([]time.Duration, n)
	var wg sync.WaitGroup
	woke := time.Now()
	for i, name := range names {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+acts[i%len(acts)]+"/", nil)
			req.Host = name + "." + ns + ".svc.cluster.local"
			at := time.Now()
			resp, err := hc.Do(req)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				codes[i] = resp.StatusCode
			}
			errs[i], took[i] = err, time.Since(at)
		})
	}
	// Until each was scaled up (a scale write answered 200 after the
	// wake, or its Deployment at 1: a write the API server answered 504
	// may still have been applied), or 3 minutes: the audit below names
	// what is missing.
	var up map[string]bool
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		up = scaledUp(ctx, ns)
		for _, w := range auditScaleWrites(t, ns) {
			if w.at.After(woke) && w.code == http.StatusOK {
				up[w.name] = true
			}
		}
		if len(up) >= n {
			break
		}
	}
	allUp := time.Since(woke)
	wg.Wait()
	t.Logf("the wave of %d: the wait for every revision's scale write ended %v after the requests went out", n, allUp.Round(100*time.Millisecond))

	// Every request answered.
	byCode := map[int]int{}
	var slowest time.Duration
	for i := range names {
		byCode[codes[i]]++
		slowest = max(slowest, took[i])
		if ok := codes[i] == http.StatusOK || codes[i] == http.StatusServiceUnavailable || codes[i] == http.StatusGatewayTimeout; !ok || errs[i] != nil {
			if byCode[codes[i]] <= 3 {
				t.Errorf("the request to %s: status %d, %v after %v; want 200 or the activator's 503/504", names[i], codes[i], errs[i], took[i])
			}
		}
	}
	if slowest > waveTimeout+10*time.Second {
		t.Errorf("the slowest request took %v, want an answer within the revision's timeout %v + 10s", slowest, waveTimeout)
	}
	t.Logf("requests: %v, the slowest answered in %v", byCode, slowest.Round(time.Millisecond))

	// The audit log: one writer per revision, each decided within the bound.
	writes := auditScaleWrites(t, ns)
	if len(writes) == 0 {
		t.Errorf("no scale write of %s in the audit log", ns)
	}
	writers := map[string][]string{}
	firstUp := map[string]time.Time{}
	share := map[string]int{}
	failed := map[int]int{}    // scale writes refused, by status
	for _, w := range writes { // every write tried, refused or not, counts for one writer
		if !slices.Contains(writers[w.name], w.writer) {
			writers[w.name] = append(writers[w.name], w.writer)
		}
		if w.code != http.StatusOK {
			failed[w.code]++
			continue
		}
		if _, seen := firstUp[w.name]; !seen && w.at.After(woke) {
			firstUp[w.name] = w.at
			share[w.writer]++
		}
	}
	// A revision scaled up without a write answered 200: its first
	// write after the wake answered 504 was applied (the API server
	// answers its timeout and may still finish the write).
	late := 0
	for _, w := range writes {
		if _, seen := firstUp[w.name]; !seen && up[w.name] && w.at.After(woke) && w.code == http.StatusGatewayTimeout {
			firstUp[w.name] = w.at
			share[w.writer]++
			late++
		}
	}
	two := 0
	for _, name := range names {
		if len(writers[name]) > 1 {
			if two++; two <= 5 {
				t.Errorf("%s/%s: scale written by %v; want one replica (the fleet did not change; a lost bucket?)", ns, name, writers[name])
			}
		}
	}
	largest := slices.Max(append(slices.Collect(maps.Values(share)), 0))
	bound := tick + time.Duration(float64(largest)*3/cluster.WritesQPS*float64(time.Second)) + 22550*time.Millisecond
	var stranded time.Duration
	var last string
	var delays []time.Duration
	undecided := 0
	for _, name := range names {
		at, ok := firstUp[name]
		if !ok {
			if undecided++; undecided <= 5 {
				t.Errorf("%s/%s: no scale write by an autoscaler in the audit log after the wave", ns, name)
			}
			continue
		}
		delays = append(delays, at.Sub(woke))
		if d := at.Sub(woke); d > stranded {
			stranded, last = d, name
		}
	}
	if stranded > bound {
		t.Errorf("%s went %v without a decision after its wake; bound %v", last, stranded, bound)
	}
	slices.Sort(delays)
	p50 := append(delays, 0)[len(delays)/2]
	t.Logf("audit: %d scale writes of %d revisions (refused: %v), %d with two writers, %d undecided, %d scaled by a write answered 504; "+
		"first writes per replica %v; decided after the wake: median %v, the last %v (bound %v); the test took %v",
		len(writes), n, failed, two, undecided, late, share, p50.Round(10*time.Millisecond), stranded.Round(10*time.Millisecond),
		bound.Round(10*time.Millisecond), time.Since(began).Round(time.Second))
	leasesPriority(t, ctx)
}

// scaledUp is the Deployments of ns with a replica or more asked for.
func scaledUp(ctx context.Context, ns string) map[string]bool {
	up := map[string]bool{}
	ds, err := env.client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return up
	}
	for _, d := range ds.Items {
		if d.Spec.Replicas != nil && *d.Spec.Replicas > 0 {
			up[d.Name] = true
		}
	}
	return up
}

// leasesPriority checks, from the API server's metrics, that the
// autoscalers' Lease calls went through their own priority level
// (deploy/kubernetes/flowcontrol.yaml) and that none was refused there.
func leasesPriority(t *testing.T, ctx context.Context) {
	t.Helper()
	raw, err := env.client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Errorf("the API server's metrics: %v", err)
		return
	}
	sum := func(metric string) float64 {
		var total float64
		for line := range strings.Lines(string(raw)) {
			if strings.HasPrefix(line, metric+"{") && strings.Contains(line, `priority_level="ebb-leases"`) {
				f := strings.Fields(line)
				v, _ := strconv.ParseFloat(f[len(f)-1], 64)
				total += v
			}
		}
		return total
	}
	dispatched, rejected := sum("apiserver_flowcontrol_dispatched_requests_total"), sum("apiserver_flowcontrol_rejected_requests_total")
	t.Logf("the autoscalers' Lease calls at priority level ebb-leases: %v dispatched, %v refused", dispatched, rejected)
	if dispatched == 0 || rejected > 0 {
		t.Errorf("priority level ebb-leases: %v Lease calls dispatched, %v refused; want them all dispatched there (flowcontrol.yaml)", dispatched, rejected)
	}
}

// createWave creates n opted-in revisions at zero whose pods no node can
// take, 16 at a time on a client of its own (QPS 100).
func createWave(t *testing.T, ns string, n int) []string {
	t.Helper()
	d := appDeployment(t, ns, "w", map[string]string{"autoscaling.knative.dev/initial-scale": "0"})
	d.Spec.Replicas = ptr(int32(0))
	d.Spec.Template.Spec.NodeSelector = map[string]string{"ebb.dev/wave": "no-such-node"}
	for i, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "app" {
			d.Spec.Template.Spec.Containers[i].Env = append(c.Env, corev1.EnvVar{Name: "REVISION_TIMEOUT_SECONDS", Value: fmt.Sprint(int(waveTimeout.Seconds()))})
		}
	}
	cfg := rest.CopyConfig(env.rest)
	cfg.QPS, cfg.Burst = 100, 200
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range next {
				names[i] = fmt.Sprintf("w-%04d", i)
				errs[i] = createNamed(c, d, names[i])
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("creating %s: %v", names[i], err)
		}
	}
	return names
}

// createNamed creates a copy of d named name (the app label and the
// revision's env renamed too).
func createNamed(c kubernetes.Interface, d *appsv1.Deployment, name string) error {
	d = d.DeepCopy()
	d.Name = name
	d.Spec.Selector.MatchLabels = map[string]string{"app": name}
	d.Spec.Template.Labels = map[string]string{"app": name}
	for i, ctr := range d.Spec.Template.Spec.Containers {
		for j, e := range ctr.Env {
			if e.Value == "w" {
				d.Spec.Template.Spec.Containers[i].Env[j].Value = name
			}
		}
	}
	_, err := c.AppsV1().Deployments(d.Namespace).Create(context.Background(), d, metav1.CreateOptions{})
	return err
}

// notBehindActivators lists the revisions whose public EndpointSlice does
// not yet route to every activator.
func notBehindActivators(ctx context.Context, ns string, names []string) []string {
	sl, err := env.client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return []string{err.Error()}
	}
	ready := map[string]bool{}
	for _, s := range sl.Items {
		n := 0
		for _, ep := range s.Endpoints {
			n += len(ep.Addresses)
		}
		ready[s.Name] = s.Labels[kplat.RouteLabel] == kplat.RouteActivator && n == activators
	}
	var left []string
	for _, name := range names {
		if !ready[kplat.PublicSliceName(name)] {
			left = append(left, name)
		}
	}
	return left
}

// scaleWrite is one successful write of a Deployment's scale by an
// autoscaler replica, as the API server's audit log records it.
type scaleWrite struct {
	name, writer string
	code         int       // the API server's answer
	at           time.Time // the API server's response (stageTimestamp)
}

// auditScaleWrites reads the API server's audit log (hack/testbed.sh
// records every write of a Deployment's scale, with the writer's user
// agent, ebb-autoscaler/POD) for the autoscalers' writes in ns, refused
// ones included.
func auditScaleWrites(t *testing.T, ns string) []scaleWrite {
	t.Helper()
	path := filepath.Join(os.Getenv("EBB_TESTBED_RUN_DIR"), "logs", "audit.log")
	f, err := os.Open(path)
	if err != nil {
		t.Errorf("the API server's audit log: %v (hack/testbed.sh writes it)", err)
		return nil
	}
	defer f.Close()
	type event struct {
		UserAgent string `json:"userAgent"`
		ObjectRef struct {
			Namespace, Name, Subresource string
		} `json:"objectRef"`
		ResponseStatus struct {
			Code int `json:"code"`
		} `json:"responseStatus"`
		StageTimestamp time.Time `json:"stageTimestamp"`
	}
	var out []scaleWrite
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.ObjectRef.Namespace != ns || e.ObjectRef.Subresource != "scale" ||
			!strings.HasPrefix(e.UserAgent, autoscalerName+"/") {
			continue
		}
		who, _, _ := strings.Cut(strings.TrimPrefix(e.UserAgent, autoscalerName+"/"), " ")
		out = append(out, scaleWrite{name: e.ObjectRef.Name, writer: who, code: e.ResponseStatus.Code, at: e.StageTimestamp})
	}
	return out
}
