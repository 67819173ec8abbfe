package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/pkg/stats"
)

// TestEndToEnd runs the activator binary against a real replica: the
// queue-proxy binary in front of a test app, both started as processes.
// A revision at zero receives 50 concurrent requests, which wait; the
// autoscaler is poked; the replica starts (listed by the platform, probed
// by the activator through the queue-proxy, whose app becomes ready 300ms
// later); all 50 succeed and the queue-proxy counts them as proxied; the
// reports reach the autoscaler; SIGTERM stops the activator with status 0.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	dir := t.TempDir()
	bin := buildBinaries(t, dir)
	as := startFakeAutoscaler(t)
	actAddr, adminAddr, appAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	qpAddr, qpAdmin := freeAddr(t), freeAddr(t)
	revs := filepath.Join(dir, "revisions.json")
	writeRevisions(t, revs, "")

	act := exec.Command(bin["activator"], "--revisions-file", revs, "--address", actAddr, "--admin-address", adminAddr,
		"--autoscaler-url", "http://"+as.addr, "--revisions-poll", "1h", "--pod-name", "activator-e2e")
	const secret = "e2e-proxy-secret-0123456789" // the marker counts only with it
	act.Env = append(os.Environ(), "ACTIVATOR_PROXY_SECRET="+secret)
	act.Stdout, act.Stderr = os.Stderr, os.Stderr
	if err := act.Start(); err != nil {
		t.Fatal(err)
	}
	defer act.Process.Kill()
	waitFor(t, "activator ready", func() bool { return get(adminAddr, "/readyz") == "ready\n" })

	const n = 50
	client := &fasthttp.HostClient{Addr: actAddr, MaxConns: n}
	var wg sync.WaitGroup
	results := make(chan string, n)
	for range n {
		wg.Go(func() {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			req.SetRequestURI("http://hello.default/")
			if err := client.DoTimeout(req, resp, 30*time.Second); err != nil {
				results <- err.Error()
				return
			}
			results <- fmt.Sprintf("%d %s", resp.StatusCode(), resp.Body())
		})
	}
	waitFor(t, "50 requests queued", func() bool {
		return strings.Contains(get(adminAddr, "/metrics"), fmt.Sprintf("ebb_activator_queued_requests %d\n", n))
	})
	waitFor(t, "the poke", func() bool { return as.sawPoke("default/hello") })

	writeRevisions(t, revs, qpAddr)
	act.Process.Signal(syscall.SIGHUP)
	app := exec.Command(bin["app"], "--addr", appAddr, "--ready-after", "300ms")
	qp := exec.Command(bin["queueproxy"])
	qp.Env = append(os.Environ(), "QUEUE_SERVING_PORT="+port(qpAddr), "QUEUE_ADMIN_PORT="+port(qpAdmin),
		"USER_PORT="+port(appAddr), "DRAIN_PERIOD_SECONDS=0", "LOG_LEVEL=warn",
		"ACTIVATOR_PROXY_SECRET="+stats.NamespaceProxySecret(secret, "default")) // its namespace's

	for _, c := range []*exec.Cmd{app, qp} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { c.Process.Kill(); c.Wait() }()
	}
	wg.Wait()
	close(results)
	for r := range results {
		if r != "200 hello" {
			t.Errorf("request ended with %q, want 200 hello", r)
		}
	}
	waitFor(t, "a report of the load", func() bool { return as.reportedRequests("default/hello") > 0 })
	waitFor(t, "the queue-proxy to count 50 proxied requests", func() bool {
		return strings.Contains(get(qpAdmin, "/metrics"), fmt.Sprintf("ebb_queue_proxied_requests_total %d\n", n))
	})

	act.Process.Signal(syscall.SIGTERM)
	if err := act.Wait(); err != nil {
		t.Errorf("activator exit: %v, want status 0", err)
	}
}

func buildBinaries(t *testing.T, dir string) map[string]string {
	t.Helper()
	bins := map[string]string{"activator": ".", "app": "ebb.dev/ebb/bench/activator/app", "queueproxy": "ebb.dev/ebb/cmd/queueproxy"}
	out := map[string]string{}
	for name, pkg := range bins {
		path := filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-o", path, pkg)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", name, err, b)
		}
		out[name] = path
	}
	return out
}

func writeRevisions(t *testing.T, path, replica string) {
	t.Helper()
	reps := ""
	if replica != "" {
		reps = fmt.Sprintf(`,"replicas":[{"address":%q}]`, replica)
	}
	doc := fmt.Sprintf(`{"revisions":[{"namespace":"default","name":"hello","timeout":"30s"%s}]}`, reps)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func port(addr string) string { return addr[strings.LastIndexByte(addr, ':')+1:] }

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func get(addr, path string) string {
	status, body, err := fasthttp.GetTimeout(nil, "http://"+addr+path, time.Second)
	if err != nil || status == 0 {
		return ""
	}
	return string(body)
}

// waitFor polls cond (up to 20s): it waits on other processes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

// fakeAutoscaler records the stats batches posted to /v1/stats.
type fakeAutoscaler struct {
	addr string
	mu   sync.Mutex
	got  []stats.Stat
}

func startFakeAutoscaler(t *testing.T) *fakeAutoscaler {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	as := &fakeAutoscaler{addr: ln.Addr().String()}
	s := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		batch, err := stats.ParseBatch(ctx.PostBody(), 1000)
		if err != nil || string(ctx.Path()) != "/v1/stats" {
			ctx.Error(fmt.Sprint(err), 400)
			return
		}
		as.mu.Lock()
		as.got = append(as.got, batch...)
		as.mu.Unlock()
		ctx.SetStatusCode(fasthttp.StatusNoContent)
	}}
	go s.Serve(ln)
	t.Cleanup(func() { s.Shutdown() })
	return as
}

func (as *fakeAutoscaler) sawPoke(rev string) bool {
	as.mu.Lock()
	defer as.mu.Unlock()
	for _, s := range as.got {
		if s.Revision == rev && s.Period == 0 && s.AverageConcurrency >= 1 && s.Source == stats.SourceActivator {
			return true
		}
	}
	return false
}

func (as *fakeAutoscaler) reportedRequests(rev string) uint64 {
	as.mu.Lock()
	defer as.mu.Unlock()
	var n uint64
	for _, s := range as.got {
		if s.Revision == rev && s.Period > 0 {
			n += s.RequestCount
		}
	}
	return n
}
