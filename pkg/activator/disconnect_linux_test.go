//go:build linux

package activator

import (
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/internal/testnet"
)

// within polls cond for up to 2s (the kernel delivers a FIN or a reset
// on loopback at once, but not synchronously with close).
func within(cond func() bool) bool {
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

func TestClientGone(t *testing.T) {
	tests := []struct {
		name string
		do   func(t *testing.T, client net.Conn)
		want bool
		sent string // what the client sent, when want is false
	}{
		{name: "idle", do: func(*testing.T, net.Conn) {}},
		{name: "bytes waiting", do: func(t *testing.T, c net.Conn) { io.WriteString(c, "GET / HTTP/1.1\r\n") }, sent: "GET / HTTP/1.1\r\n"},
		{name: "closed", do: func(t *testing.T, c net.Conn) { c.Close() }, want: true},
		{name: "closed behind bytes waiting", do: func(t *testing.T, c net.Conn) {
			io.WriteString(c, strings.Repeat("x", 10000))
			c.Close()
		}, want: true},
		{name: "half closed", do: func(t *testing.T, c net.Conn) { c.(*net.TCPConn).CloseWrite() }, want: true},
		{name: "reset", do: func(t *testing.T, c net.Conn) {
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, server := testnet.TCPPair(t)
			if !canPeek(server) {
				t.Fatal("canPeek(TCP connection) = false")
			}
			tt.do(t, client)
			buf := make([]byte, 1)
			if got := within(func() bool { return clientGone(server, buf) == tt.want }); !got {
				t.Errorf("clientGone = %v, want %v", !tt.want, tt.want)
			}
			if tt.want {
				return
			}
			if err := client.Close(); err != nil {
				t.Fatal(err)
			}
			if !within(func() bool { return clientGone(server, buf) }) {
				t.Error("clientGone = false after close, want true")
			}
			// Peeking consumed nothing: the server still reads all that was sent.
			server.SetReadDeadline(time.Now().Add(time.Second))
			if got, err := io.ReadAll(server); err != nil || string(got) != tt.sent {
				t.Errorf("the server read %q, %v; want %q", got, err, tt.sent)
			}
		})
	}
	p1, p2 := net.Pipe()
	defer p1.Close()
	defer p2.Close()
	if canPeek(p1) || clientGone(p1, make([]byte, 1)) {
		t.Error("an in-memory pipe can be peeked at, want not")
	}
}

// TestQueuedClientGone: a queued request whose client closes its
// connection leaves the queue within a check interval: its budgets are
// refunded, the request behind it gets the slot, the replica never sees
// it, and it is counted as client_gone. The client of the POST case sent
// a body too large for fasthttp's read-ahead, so the rest of it waits in
// the socket in front of the end of file.
func TestQueuedClientGone(t *testing.T) {
	tests := []struct {
		name    string
		request string
	}{
		{name: "GET", request: "GET /gone HTTP/1.1\r\nHost: hello.default\r\n\r\n"},
		{name: "POST with the body in the socket", request: fmt.Sprintf(
			"POST /gone HTTP/1.1\r\nHost: hello.default\r\nContent-Length: 32768\r\n\r\n%s", strings.Repeat("b", 32768))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, b, ln, served := holdingTCPHarness(t)
			client := &fasthttp.HostClient{Addr: ln.Addr().String(), MaxConns: 4}
			get := func(path string, out chan<- string) {
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				req.SetRequestURI("http://hello.default" + path)
				if err := client.DoTimeout(req, resp, 10*time.Second); err != nil {
					out <- err.Error()
					return
				}
				out <- fmt.Sprintf("%d %s", resp.StatusCode(), resp.Body())
			}
			first, third := make(chan string, 1), make(chan string, 1)
			go get("/first", first)
			h.eventually("the first request at the replica", func() bool { return b.inFlight.Load() == 1 })

			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			go io.WriteString(conn, tt.request)
			h.eventually("the second request queued", func() bool { return h.a.global.count.Load() == 1 })
			go get("/third", third)
			h.eventually("the third request queued", func() bool { return h.a.global.count.Load() == 2 })
			bytesBoth := h.a.global.bytes.Load()

			conn.Close()
			h.eventually("the gone client's request out of the queue", func() bool { return h.a.global.count.Load() == 1 })
			if got := h.a.global.bytes.Load(); tt.name != "GET" && got >= bytesBoth {
				t.Errorf("queued bytes %d after the client left, want less than %d", got, bytesBoth)
			}
			h.eventually("the request counted as client_gone", func() bool { // just after it left the queue
				return testutil.ToFloat64(h.a.metrics.results[resultClientGone]) == 1 &&
					testutil.ToFloat64(h.a.routes.Load().byKey["default/hello"].m.results[resultClientGone]) == 1
			})

			close(b.hold)
			for _, ch := range []chan string{first, third} {
				if got := <-ch; got != "200 ok" {
					t.Errorf("request ended with %q, want 200 ok", got)
				}
			}
			if paths := served(); strings.Join(paths, " ") != "/first /third" {
				t.Errorf("the replica served %q, want /first /third (never the request whose client left)", paths)
			}
			h.eventually("all finished", func() bool { return h.a.open.Load() == 0 && h.a.watch.len() == 0 })
		})
	}
}

// TestClientWatchDoesNotBlock: a watched connection another goroutine is
// reading from (a request that left the queue and reads its body while a
// scan still lists it) does not hold up the check; a closed one wakes its
// waiter.
func TestClientWatchDoesNotBlock(t *testing.T) {
	var w clientWatch
	busyClient, busy := testnet.TCPPair(t)
	goneClient, gone := testnet.TCPPair(t)
	xBusy := &exchange{watchIdx: -1, gone: make(chan struct{}, 1)}
	xGone := &exchange{watchIdx: -1, gone: make(chan struct{}, 1)}
	w.add(xBusy, busy)
	w.add(xGone, gone)
	reading := make(chan struct{})
	go func() {
		close(reading)
		busy.Read(make([]byte, 1)) // blocks until the client writes or closes
	}()
	<-reading
	goneClient.Close()
	done := make(chan int, 1)
	go func() {
		woken := 0
		for range 200 { // until the FIN has arrived
			if woken = w.check(); woken > 0 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		done <- woken
	}()
	select {
	case woken := <-done:
		if woken != 1 {
			t.Errorf("check woke %d waiters, want 1", woken)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("check blocked behind a read")
	}
	select {
	case <-xGone.gone:
	default:
		t.Error("the waiter of the closed connection was not woken")
	}
	w.remove(xGone)
	w.remove(xBusy)
	busyClient.Close()
	if w.len() != 0 {
		t.Errorf("%d still watched", w.len())
	}
}

// TestClientGoneAtGrant: a client that leaves just before its request is
// granted a slot (no periodic check in between) is caught by the check at
// the grant: the slot is handed back and the replica never sees it.
func TestClientGoneAtGrant(t *testing.T) {
	h, b, ln, served := holdingTCPHarness(t)
	first := make(chan int, 1)
	go func() {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI("http://hello.default/first")
		if err := (&fasthttp.HostClient{Addr: ln.Addr().String()}).DoTimeout(req, resp, 10*time.Second); err != nil {
			first <- 0
			return
		}
		first <- resp.StatusCode()
	}()
	h.eventually("the first request at the replica", func() bool { return b.inFlight.Load() == 1 })
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, "GET /gone HTTP/1.1\r\nHost: hello.default\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	h.eventually("the second request queued", func() bool { return h.a.global.count.Load() == 1 })
	conn.Close()
	close(b.hold) // at once: the periodic check (every 200 ms) has most likely not run yet
	if code := <-first; code != 200 {
		t.Errorf("first request: %d, want 200", code)
	}
	h.eventually("all finished", func() bool { return h.a.open.Load() == 0 })
	if paths := served(); slices.Contains(paths, "/gone") {
		t.Errorf("the replica served %q, want never the request whose client left", paths)
	}
}

// holdingTCPHarness is an activator on a TCP listener in front of one
// replica (containerConcurrency 1) that holds each request until b.hold
// closes and answers "ok"; served lists the paths it served.
func holdingTCPHarness(t *testing.T) (h *harness, b *backend, ln net.Listener, served func() []string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h = newHarness(t, func(o *Options) { o.Listener = ln }, rev("hello", 1, Replica{Address: "r1:80", Ready: true}))
	b = h.backend("r1:80", true)
	b.hold = make(chan struct{})
	var mu sync.Mutex
	var paths []string
	b.handler = func(ctx *fasthttp.RequestCtx) {
		mu.Lock()
		paths = append(paths, string(ctx.Path()))
		mu.Unlock()
		ctx.SetBodyString("ok")
	}
	return h, b, ln, func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(paths) }
}
