package ledger

import (
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// crashingApp is an app that exits after every exitAfter requests: its
// listener and every connection close at once, the request that made it
// exit unanswered (a process that died), and a new one listens on its
// address after down (the kubelet's restart), or never (down 0). mu owns
// ln and stopped.
type crashingApp struct {
	t         *testing.T
	addr      string
	exitAfter int64
	down      time.Duration
	served    atomic.Int64
	deaths    atomic.Int64
	wg        sync.WaitGroup

	mu      sync.Mutex
	ln      *crashListener
	stopped bool
}

func startCrashingApp(t *testing.T, exitAfter int64, down time.Duration) *crashingApp {
	t.Helper()
	a := &crashingApp{t: t, exitAfter: exitAfter, down: down}
	ln := listen(t)
	a.addr = ln.Addr().String()
	a.serve(ln)
	t.Cleanup(func() {
		a.mu.Lock()
		a.stopped = true
		a.ln.kill()
		a.mu.Unlock()
		a.wg.Wait()
	})
	return a
}

// serve runs one life of the app on ln. Called with mu held, or before
// the app is shared.
func (a *crashingApp) serve(ln net.Listener) {
	a.ln = &crashListener{Listener: ln, conns: map[net.Conn]bool{}}
	s := &fasthttp.Server{Handler: a.handle, Logger: quietLog{}}
	cl := a.ln
	a.wg.Go(func() { _ = s.Serve(cl) })
}

func (a *crashingApp) handle(ctx *fasthttp.RequestCtx) {
	if n := a.served.Add(1); n%a.exitAfter == 0 {
		a.crash()
		return
	}
	fmt.Fprintf(ctx, "ok %d", len(ctx.Request.Body()))
}

// crash ends this life of the app, and schedules the next.
func (a *crashingApp) crash() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.deaths.Add(1)
	a.ln.kill()
	if a.down == 0 || a.stopped {
		return
	}
	a.wg.Go(func() {
		time.Sleep(a.down)
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.stopped {
			return
		}
		for range 50 { // the port is ours; a retry covers a slow close
			if ln, err := net.Listen("tcp", a.addr); err == nil {
				a.serve(ln)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		a.t.Errorf("restarting the app on %s", a.addr)
	})
}

type quietLog struct{}

func (quietLog) Printf(string, ...any) {}

// hammer sends GETs and POSTs (a small body) to the revision through addr
// from clients goroutines, for d or perClient requests each, and counts
// the answers by method and status ("POST 502"; "GET error" for a
// transport error).
func hammer(addr string, clients, perClient int, d time.Duration) map[string]int {
	hc := &fasthttp.HostClient{Addr: addr, MaxConns: clients, ReadTimeout: 2 * requestTimeoutSeconds * time.Second}
	var mu sync.Mutex
	counts := map[string]int{}
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			for i := 0; i < perClient && time.Now().Before(end); i++ {
				req.Reset()
				req.SetRequestURI("http://" + addr + "/")
				req.SetHost("ledger.default")
				method := "GET"
				if (c+i)%2 == 1 {
					method = "POST"
					req.Header.SetMethod(method)
					req.SetBodyString("charge-card-" + fmt.Sprint(c*perClient+i))
				}
				key := method + " error"
				err := hc.Do(req, resp)
				if err == nil {
					key = fmt.Sprintf("%s %d", method, resp.StatusCode())
				}
				mu.Lock()
				if counts[key]++; counts[key] == 1 && key != method+" 200" {
					counts[key+" ("+firstLine(resp.Body(), err)+")"] = 0 // the first answer of each kind, to read
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return counts
}

// firstLine is the first line of an answer's body, or the error.
func firstLine(body []byte, err error) string {
	if err != nil {
		return err.Error()
	}
	line, _, _ := strings.Cut(string(body), "\n")
	return line
}

// failures are the answers other than 200, by method and status.
func failures(counts map[string]int, method string) int {
	n := 0
	for k, v := range counts {
		if strings.HasPrefix(k, method+" ") && k != method+" 200" && !strings.Contains(k, "(") {
			n += v
		}
	}
	return n
}

func summary(counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		if strings.Contains(k, "(") {
			fmt.Fprintf(&b, "%s; ", k)
			continue
		}
		fmt.Fprintf(&b, "%s: %d; ", k, counts[k])
	}
	return b.String()
}

// TestCrashingAppIsNoStorm: an app that dies under load (its port
// refuses connections) costs the clients at most the requests that were
// at it when it died, never one error per request sent while it is down:
// the queue-proxy proves to the activator that a refused request never
// reached the app, and the activator sends it to another replica, or
// holds it until one is back. A GET at the dying app is sent again (it is
// idempotent); only a POST the app had read may fail (502).
func TestCrashingAppIsNoStorm(t *testing.T) {
	const clients = 12
	tests := []struct {
		name      string
		replicas  int
		exitAfter int64
		down      time.Duration // 0: the first replica's app never comes back
	}{
		{name: "one of three replicas dies for good", replicas: 3, exitAfter: 150},
		{name: "the only replica crash-loops", replicas: 1, exitAfter: 150, down: 300 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var qps []string
			crashing := startCrashingApp(t, tt.exitAfter, tt.down)
			addr, _ := startQueueProxy(t, crashing.addr, setup{})
			qps = append(qps, addr)
			for range tt.replicas - 1 {
				healthy := startCrashingApp(t, 1<<62, 0)
				addr, _ := startQueueProxy(t, healthy.addr, setup{})
				qps = append(qps, addr)
			}
			front := startActivatorFor(t, qps, setup{})
			counts := hammer(front, clients, 400, 4*time.Second)
			deaths := int(crashing.deaths.Load())
			t.Logf("%d replicas, the app died %d times: %s", tt.replicas, deaths, summary(counts))
			if deaths == 0 {
				t.Fatalf("the app never died: %s", summary(counts))
			}
			if n := failures(counts, "GET"); n != 0 {
				t.Errorf("%d GETs failed, want none (a GET at the dying app is sent again): %s", n, summary(counts))
			}
			if n, most := failures(counts, "POST"), deaths*clients; n > most {
				t.Errorf("%d POSTs failed, want at most %d (those at the app when it died, %d deaths x %d clients): %s",
					n, most, deaths, clients, summary(counts))
			}
		})
	}
}
