package main

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"ebb.dev/ebb/internal/heytest"
	"ebb.dev/ebb/internal/testnet"
	"ebb.dev/ebb/pkg/autoscaler"
)

// The end-to-end tests run the real binaries on 127.0.0.1: `autoscaler run`
// with the local platform, the queue-proxy and the sample app, driven by
// hey. They use a 6s stable window so that a whole cycle takes seconds.

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds autoscaler, queueproxy, hello, grpchello and cpuwork once
// per test binary.
func binaries(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "ebb-e2e-bin-")
		if buildErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", binDir+"/", "ebb.dev/ebb/cmd/autoscaler", "ebb.dev/ebb/cmd/queueproxy",
			"ebb.dev/ebb/deploy/local/hello", "ebb.dev/ebb/deploy/local/grpchello", "ebb.dev/ebb/deploy/local/cpuwork").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// ebb is a running `autoscaler run`.
type ebb struct {
	cmd         *exec.Cmd
	front, api  string
	dir, logDir string
	log         string
	record      string // --record: the decider's recordings
	done        chan struct{}
}

const e2eConfig = `apiVersion: v1
kind: ConfigMap
metadata: {name: config-autoscaler, namespace: ebb-system}
data:
  stable-window: "6s"
  scale-to-zero-grace-period: "2s"
  allow-zero-initial-scale: "true"
  initial-scale: "0"
`

func e2eRevision(bin string, extraArgs ...string) string {
	args := append([]string{"--latency=50ms", "--startup-delay=200ms"}, extraArgs...)
	return e2eDeployment(map[string]string{"autoscaling.knative.dev/target": "5",
		"autoscaling.knative.dev/target-utilization-percentage": "100", "autoscaling.knative.dev/max-scale": "8"},
		e2eContainer("hello", filepath.Join(bin, "hello"), args...))
}

// e2eDeployment is the Deployment "hello" in default (the revision
// startEbb waits for), opted in, with these pod-template annotations and
// one container (e2eContainer).
func e2eDeployment(annotations map[string]string, container string) string {
	keys := slices.Sorted(maps.Keys(annotations))
	var anns strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&anns, "        %s: %s\n", k, strconv.Quote(annotations[k]))
	}
	return `apiVersion: apps/v1
kind: Deployment
metadata: {name: hello, namespace: default, labels: {autoscaling.ebb.dev/enabled: "true"}}
spec:
  selector: {matchLabels: {app: hello}}
  template:
    metadata:
      labels: {app: hello}
      annotations:
` + anns.String() + `    spec:
      containers:
` + container
}

// e2eContainer is a container of e2eDeployment running command with args;
// more lines of its spec (ports, resources) may follow it.
func e2eContainer(name, command string, args ...string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strconv.Quote(a)
	}
	return `        - name: ` + name + `
          image: unused
          command: [` + strconv.Quote(command) + `]
          args: [` + strings.Join(q, ", ") + `]
`
}

func startEbb(t *testing.T, manifests map[string]string) *ebb {
	t.Helper()
	bin := binaries(t)
	dir := t.TempDir()
	for name, content := range manifests {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := &ebb{front: freeAddr(t), api: freeAddr(t), dir: dir, logDir: filepath.Join(dir, "logs"),
		log: filepath.Join(dir, "autoscaler.log"), record: t.TempDir(), done: make(chan struct{})}
	logf, err := os.Create(e.log)
	if err != nil {
		t.Fatal(err)
	}
	e.cmd = exec.Command(filepath.Join(bin, "autoscaler"), "run", "--manifests", dir, "--listen", e.front, "--admin", e.api,
		"--queue-proxy", filepath.Join(bin, "queueproxy"), "--log-dir", e.logDir, "--record", e.record)
	e.cmd.Stdout, e.cmd.Stderr = logf, logf
	if err := e.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { e.cmd.Wait(); logf.Close(); close(e.done) }()
	t.Cleanup(func() {
		e.stop(t)
		if t.Failed() {
			data, _ := os.ReadFile(e.log)
			t.Logf("autoscaler log:\n%s", tail(string(data), 60))
		}
	})
	e.waitFor(t, 20*time.Second, "the revision to be known", func(st autoscaler.Status) bool { return st.Name == "hello" })
	// The activator learns the revision a moment after the autoscaler
	// does: a request in between is answered 404 (seen on a loaded
	// machine), so wait for its log line too.
	testnet.WaitUntil(t, "the activator to know the revision", func() bool {
		data, _ := os.ReadFile(e.log)
		return strings.Contains(string(data), `"message":"revision added","revision":"default/hello"`)
	})
	return e
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// stop sends SIGTERM and waits; then checks that no child outlived it.
func (e *ebb) stop(t *testing.T) {
	e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.done:
	case <-time.After(60 * time.Second):
		e.cmd.Process.Kill()
		<-e.done
		t.Errorf("autoscaler run did not exit within 60s of SIGTERM")
	}
	waitNoChildren(t, e.logDir)
}

// children lists the processes whose command line mentions the test's
// binaries and log directory: replicas of this test.
func children(logDirHint string) []string {
	out, _ := exec.Command("pgrep", "-af", binDir).Output()
	var pids []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" && !strings.Contains(l, "pgrep") && !strings.Contains(l, " run --manifests") {
			pids = append(pids, l)
		}
	}
	return pids
}

func waitNoChildren(t *testing.T, logDir string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if len(children(logDir)) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("replica processes outlived the autoscaler: %v", children(logDir))
}

func (e *ebb) status(t *testing.T) autoscaler.Status {
	t.Helper()
	var list []autoscaler.Status
	if err := getJSON("http://"+e.api+"/revisions", &list); err != nil || len(list) == 0 {
		return autoscaler.Status{}
	}
	return list[0]
}

func (e *ebb) waitFor(t *testing.T, limit time.Duration, what string, ok func(autoscaler.Status) bool) autoscaler.Status {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if st := e.status(t); ok(st) {
			return st
		}
		select {
		case <-e.done:
			t.Fatalf("autoscaler exited while waiting for %s", what)
		case <-time.After(100 * time.Millisecond):
		}
	}
	st := e.status(t)
	t.Fatalf("waited %v for %s; status: %+v", limit, what, st)
	return st
}

// startHey starts hey against the front door of e, for the revision hello,
// and returns where its result arrives. hey is built on the test
// goroutine; it runs in its own, which never touches t: the caller checks
// the error.
func startHey(t *testing.T, e *ebb, args ...string) <-chan heyOutcome {
	t.Helper()
	hey := heytest.Path(t)
	full := append([]string{"-host", "hello.default.localhost", "-t", "20"}, args...)
	full = append(full, "http://"+e.front+"/")
	done := make(chan heyOutcome, 1)
	go func() {
		res, err := heytest.Run(context.Background(), hey, full...)
		done <- heyOutcome{res, err}
	}()
	return done
}

type heyOutcome struct {
	heytest.Result
	err error
}

// runHey runs hey against e and waits for its result.
func runHey(t *testing.T, e *ebb, args ...string) heytest.Result {
	t.Helper()
	return waitHey(t, startHey(t, e, args...))
}

// waitHey waits for a hey run of startHey and fails the test if hey failed.
func waitHey(t *testing.T, done <-chan heyOutcome) heytest.Result {
	t.Helper()
	out := <-done
	if out.err != nil {
		t.Fatal(out.err)
	}
	return out.Result
}

func get(t *testing.T, e *ebb) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+e.front+"/", nil)
	req.Host = "hello.default.localhost"
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET through the activator: %v", err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	bufio.NewReader(resp.Body).WriteTo(&b)
	return resp.StatusCode, b.String()
}

// fromZeroUnderLoad checks that the revision starts at zero and answers a
// first request (a cold start through the activator), then runs hey with
// clients for d and checks that every response is a 200. It returns hey's
// result and the revision's status after it.
func fromZeroUnderLoad(t *testing.T, e *ebb, d, clients string) (heytest.Result, autoscaler.Status) {
	t.Helper()
	if st := e.status(t); st.Desired != 0 {
		t.Fatalf("revision starts with %d replicas, want 0 (initial-scale 0)", st.Desired)
	}
	code, body := get(t, e)
	if code != http.StatusOK || !strings.HasPrefix(body, "hello from") {
		t.Fatalf("first request at zero: %d %q", code, body)
	}
	res := runHey(t, e, "-z", d, "-c", clients)
	if res.Codes[200] != res.Total || res.Total == 0 || len(res.Errors) > 0 {
		t.Fatalf("under load: %v responses by code, errors %v; want only 200", res.Codes, res.Errors)
	}
	return res, e.status(t)
}

// TestEndToEndScaleCycle: from zero on the first request, up under load to
// the count the decider predicts, back to zero after the load; not one
// non-2xx response on the way.
func TestEndToEndScaleCycle(t *testing.T) {
	e := startEbb(t, map[string]string{"config.yaml": e2eConfig, "hello.yaml": e2eRevision(binaries(t))})
	// 20 clients on a 50 ms app keep 20 requests in flight: 20 / 5 = 4 pods.
	res, st := fromZeroUnderLoad(t, e, "10s", "20")
	t.Logf("under 20 clients: %d responses %v; desired %d, ready %d, stable %.2f", res.Total, res.Codes, st.Desired, st.Ready, st.Stable)
	if st.Desired < 4 || st.Desired > 5 {
		t.Errorf("desired %d under 20 in flight at a target of 5; want 4 (5 with the activator's share)", st.Desired)
	}
	e.waitFor(t, 30*time.Second, "scale to zero", func(st autoscaler.Status) bool { return st.Desired == 0 && st.Ready == 0 })
	if code, _ := get(t, e); code != http.StatusOK {
		t.Errorf("request after scale to zero: %d", code)
	}
}

// TestEndToEndKilledReplica: a replica's app killed under load is
// replaced; its in-flight requests fail fast with an error status, none
// hangs.
func TestEndToEndKilledReplica(t *testing.T) {
	bin := binaries(t)
	e := startEbb(t, map[string]string{"config.yaml": e2eConfig, "hello.yaml": e2eRevision(bin, "--latency=300ms")})
	done := startHey(t, e, "-z", "8s", "-c", "10")
	e.waitFor(t, 20*time.Second, "two ready replicas", func(st autoscaler.Status) bool { return st.Ready >= 2 })
	out, err := exec.Command("pgrep", "-f", filepath.Join(bin, "hello")).Output()
	pids := strings.Fields(string(out))
	if err != nil || len(pids) == 0 {
		t.Fatalf("no app process found: %v", err)
	}
	pid, _ := strconv.Atoi(pids[0])
	before := e.status(t).Ready
	syscall.Kill(pid, syscall.SIGKILL)
	res := waitHey(t, done)
	t.Logf("killed app pid %d under load: responses by code %v, errors %v", pid, res.Codes, res.Errors)
	for _, er := range res.Errors {
		if strings.Contains(er, "Timeout") || strings.Contains(er, "deadline") {
			t.Errorf("a request hung instead of failing: %s", er)
		}
	}
	if res.Codes[200] == 0 {
		t.Errorf("no successful request: %v", res.Codes)
	}
	for code := range res.Codes {
		if code != 200 && code != 502 && code != 503 {
			t.Errorf("unexpected status %d (%d times)", code, res.Codes[code])
		}
	}
	e.waitFor(t, 20*time.Second, "the killed replica to be replaced",
		func(st autoscaler.Status) bool { return st.Ready >= min(before, st.Desired) && st.Ready > 0 })
}

// TestEndToEndDeciderRestartKeepsScale: a configuration reload restarts the
// revision's decider, as an autoscaler restart does; with pods ready it
// starts in panic mode and does not scale the loaded revision down.
func TestEndToEndDeciderRestartKeepsScale(t *testing.T) {
	e := startEbb(t, map[string]string{"config.yaml": e2eConfig, "hello.yaml": e2eRevision(binaries(t))})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := startHey(t, e, "-z", "14s", "-c", "20")
	loaded := e.waitFor(t, 20*time.Second, "scale up", func(st autoscaler.Status) bool { return st.Ready >= 3 })
	restarted := strings.Replace(e2eConfig, `"2s"`, `"3s"`, 1)
	if err := os.WriteFile(filepath.Join(e.dir, "config.yaml"), []byte(restarted), 0o644); err != nil {
		t.Fatal(err)
	}
	lowest := loaded.Desired
	deadline := time.After(6 * time.Second)
watch:
	for {
		select {
		case <-deadline:
			break watch
		case <-ctx.Done():
			break watch
		case <-time.After(200 * time.Millisecond):
			if st := e.status(t); st.Desired > 0 {
				lowest = min(lowest, st.Desired)
			}
		}
	}
	res := waitHey(t, done)
	if lowest < loaded.Ready {
		t.Errorf("desired fell to %d after the decider restart with %d ready under load", lowest, loaded.Ready)
	}
	if res.Codes[200] != res.Total {
		t.Errorf("responses %v during the restart; want only 200", res.Codes)
	}
	data, _ := os.ReadFile(e.log)
	if !strings.Contains(string(data), "configuration changed; decider restarts") {
		t.Errorf("the reload did not restart the decider")
	}
}

// TestEndToEndNoOrphans: killing the autoscaler outright takes its replicas
// with it.
func TestEndToEndNoOrphans(t *testing.T) {
	e := startEbb(t, map[string]string{"config.yaml": e2eConfig, "hello.yaml": e2eRevision(binaries(t))})
	if code, _ := get(t, e); code != http.StatusOK {
		t.Fatalf("request: %d", code)
	}
	if len(children(e.logDir)) == 0 {
		t.Fatal("no replica process running")
	}
	e.cmd.Process.Kill()
	<-e.done
	waitNoChildren(t, e.logDir)
}
