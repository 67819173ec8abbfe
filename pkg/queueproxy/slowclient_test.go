package queueproxy

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/internal/testnet"
)

// slowConfig is a queue-proxy on loopback with short client deadlines.
func slowConfig(t *testing.T) Config {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	app := &fasthttp.Server{Handler: testApp, StreamRequestBody: true, Logger: quietLogger{}}
	go func() { _ = app.Serve(ln) }()
	t.Cleanup(func() { _ = app.Shutdown() })
	appPort := ln.Addr().(*net.TCPAddr).Port
	return testConfig(t, func(c *Config) {
		c.UserPort = appPort
		c.DrainPeriod = 0
		c.HeaderTimeout = 300 * time.Millisecond
		c.ClientIdleTimeout = 300 * time.Millisecond
		c.MaxConns = 4
		c.AdminMaxConns = 2
	})
}

// dialStalled opens n connections to addr that each send a partial
// request head and then nothing.
func dialStalled(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: stalled\r\nAuthorization: Bearer s"); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	return conns
}

// get sends one request on a new connection to addr and returns the status.
func getStatus(t *testing.T, addr, path string) int {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// TestStalledHeadsClosed: connections that stall in their first request
// head fill the connection cap, and the head deadline closes them, so new
// requests are served again; the same on the admin port. (The serving
// port's server is proxycore's, tested there; this checks the
// queue-proxy's wiring of its settings, and its admin port.)
func TestStalledHeadsClosed(t *testing.T) {
	c := slowConfig(t)
	q, serving, admin, cancel, _ := runTCP(t, c)
	defer cancel()
	waitUntil(t, q.ready.ready)

	for _, port := range []struct {
		name, addr, path string
		n                int
	}{
		{"serving", serving.Addr().String(), "/", c.MaxConns},
		{"admin", admin.Addr().String(), "/healthz", c.AdminMaxConns},
	} {
		t.Run(port.name, func(t *testing.T) {
			stalled := dialStalled(t, port.addr, port.n)
			for _, s := range stalled {
				testnet.WaitClosed(t, s)
			}
			if code := getStatus(t, port.addr, port.path); code != 200 {
				t.Errorf("GET %s after the stalled connections closed = %d, want 200", port.path, code)
			}
		})
	}
}
