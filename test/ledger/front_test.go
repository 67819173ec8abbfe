package ledger

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"ebb.dev/ebb/internal/testnet"
	"ebb.dev/ebb/pkg/activator"
	"ebb.dev/ebb/pkg/activator/filesource"
	"ebb.dev/ebb/pkg/queueproxy"
	"ebb.dev/ebb/pkg/stats"
)

// route is one way from the client to the app.
type route string

const (
	viaQueueProxy route = "queue-proxy"
	viaActivator  route = "activator"
	viaChain      route = "activator+queue-proxy"
)

var routes = []route{viaQueueProxy, viaActivator, viaChain}

// door is the front of a route: the address clients send to, and the
// faults the suite injects into the proxies themselves.
type door struct {
	addr string
	// killQueueProxy crashes the route's queue-proxy (listener and
	// connections closed) and starts a new one on the same address; nil
	// on a route without one.
	killQueueProxy func()
}

// setup is what a test changes of the proxies' configuration; the zero
// value is the ledger's.
type setup struct {
	// cc is the revision's containerConcurrency (the queue-proxy's
	// breaker, the activator's slots per replica); 0: no limit.
	cc int
	// writeTimeout is both proxies' client write timeout; 0: the default.
	writeTimeout time.Duration
}

// front starts the components of r in front of the app at appAddr. They
// stop when the test ends.
//
// This is the one place that knows how the queue-proxy and the activator
// are configured and wired: the activator's marker to the queue-proxy, and
// any secret it needs, belong here.
func front(t testing.TB, r route, appAddr string) door { return frontWith(t, r, appAddr, setup{}) }

// frontWith is front with a setup.
func frontWith(t testing.TB, r route, appAddr string, s setup) door {
	t.Helper()
	switch r {
	case viaQueueProxy:
		addr, kill := startQueueProxy(t, appAddr, s)
		return door{addr: addr, killQueueProxy: kill}
	case viaActivator:
		return door{addr: startActivator(t, appAddr, s)}
	case viaChain:
		addr, kill := startQueueProxy(t, appAddr, s)
		return door{addr: startActivator(t, addr, s), killQueueProxy: kill}
	}
	t.Fatalf("unknown route %q", r)
	return door{}
}

// requestTimeoutSeconds is the revision's request timeout in both proxies.
const requestTimeoutSeconds = 10

// startQueueProxy runs a queue-proxy for the app at appAddr (127.0.0.1)
// and waits until it is ready. kill crashes it and starts another on the
// same address (called between requests, from one goroutine).
// ledgerProxySecret is the activator's proxied-request secret, as an
// install has one (the queue-proxy holds its namespace's, derived from
// it): the chain runs as on a cluster.
const ledgerProxySecret = "ledger-proxy-secret-0123456789"

func startQueueProxy(t testing.TB, appAddr string, s setup) (addr string, kill func()) {
	t.Helper()
	_, port, _ := net.SplitHostPort(appAddr)
	env := map[string]string{
		"USER_PORT": port, "REVISION_TIMEOUT_SECONDS": strconv.Itoa(requestTimeoutSeconds),
		"DRAIN_PERIOD_SECONDS": "0", "SERVING_POD": "ledger", "BUSY_POLL_MICROSECONDS": "0", "LOG_LEVEL": "error",
		stats.ProxySecretEnv: stats.NamespaceProxySecret(ledgerProxySecret, "default"), "CONTAINER_CONCURRENCY": strconv.Itoa(s.cc),
	}
	if s.writeTimeout > 0 {
		env["QUEUE_CLIENT_WRITE_TIMEOUT_SECONDS"] = strconv.FormatFloat(s.writeTimeout.Seconds(), 'f', -1, 64)
	}
	c, err := queueproxy.Load(nil, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatalf("queue-proxy config: %v", err)
	}
	ln := listen(t)
	addr = ln.Addr().String()
	current := runQueueProxy(t, c, ln)
	kill = func() {
		current.kill()
		var err error
		for range 50 { // the port is ours; a retry covers a slow close
			if ln, err = net.Listen("tcp", addr); err == nil {
				current = runQueueProxy(t, c, ln)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Errorf("restarting the queue-proxy on %s: %v", addr, err)
	}
	return addr, kill
}

// runQueueProxy serves one queue-proxy on ln until the test ends or it is
// killed.
func runQueueProxy(t testing.TB, c queueproxy.Config, ln net.Listener) *crashListener {
	t.Helper()
	q, err := queueproxy.New(c, zap.NewNop())
	if err != nil {
		t.Fatalf("queue-proxy: %v", err)
	}
	serving, admin := &crashListener{Listener: ln, conns: map[net.Conn]bool{}}, listen(t)
	run(t, "queue-proxy", func(ctx context.Context) error {
		err := q.Run(ctx, queueproxy.Listeners{Serving: serving, Admin: admin})
		if serving.crashed.Load() {
			return nil // its serving port failed: that was the point
		}
		return err
	})
	healthz := "http://" + admin.Addr().String() + "/healthz"
	testnet.WaitUntil(t, "the queue-proxy ready", func() bool {
		resp, err := probeClient.Get(healthz)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return serving
}

// probeClient asks a queue-proxy's admin port whether it is ready.
var probeClient = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// crashListener is a listener whose connections can all be closed at once
// with it, as when a process dies. mu owns conns.
type crashListener struct {
	net.Listener
	crashed atomic.Bool
	mu      sync.Mutex
	conns   map[net.Conn]bool
}

func (l *crashListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.crashed.Load() {
		c.Close()
		return nil, net.ErrClosed
	}
	l.conns[c] = true
	return c, nil
}

// kill closes the listener and every connection it accepted.
func (l *crashListener) kill() {
	l.crashed.Store(true)
	l.Listener.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		c.Close()
	}
}

// startActivator runs an activator whose one revision, default/ledger
// (Host ledger.default), has one ready replica at replicaAddr.
func startActivator(t testing.TB, replicaAddr string, s setup) string {
	t.Helper()
	return startActivatorFor(t, []string{replicaAddr}, s)
}

// startActivatorFor is startActivator with a ready replica at each of
// replicaAddrs.
func startActivatorFor(t testing.TB, replicaAddrs []string, s setup) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "revisions.json")
	reps := ""
	for i, addr := range replicaAddrs {
		if i > 0 {
			reps += ","
		}
		reps += fmt.Sprintf(`{"address":%q,"ready":true}`, addr)
	}
	doc := fmt.Sprintf(`{"revisions":[{"namespace":"default","name":"ledger","timeout":"%ds","containerConcurrency":%d,`+
		`"replicas":[%s]}]}`, requestTimeoutSeconds, s.cc, reps)
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	ln := listen(t)
	o := activator.DefaultOptions()
	o.Listener, o.Platform = ln, &filesource.Source{Path: file, Interval: time.Hour}
	o.PodName, o.DrainTimeout, o.ProxySecret = "ledger-activator", 5*time.Second, ledgerProxySecret
	o.BusyPoll = 0 // no busy polling: the test runs many processes on shared CPUs
	if s.writeTimeout > 0 {
		o.WriteTimeout = s.writeTimeout
	}
	a, err := activator.New(o)
	if err != nil {
		t.Fatalf("activator: %v", err)
	}
	run(t, "activator", a.Run)
	testnet.WaitUntil(t, "the activator ready", a.Ready)
	return ln.Addr().String()
}

func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// run starts a component's Run and, when the test ends, stops it and
// checks that it returned cleanly within its drain bound.
func run(t testing.TB, name string, fn func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: Run: %v", name, err)
			}
		case <-time.After(2 * requestTimeoutSeconds * time.Second):
			t.Errorf("%s: still running %ds after its stop", name, 2*requestTimeoutSeconds)
		}
	})
}
