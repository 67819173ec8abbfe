package queueproxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
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
// requests are served again; the same on the admin port.
func TestStalledHeadsClosed(t *testing.T) {
	c := slowConfig(t)
	q, serving, admin, cancel, _ := runTCP(t, c)
	defer cancel()
	waitUntil(t, q.ready.Ready)

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

// TestIdleKeepAliveClosed: a keep-alive connection with no next request is
// closed after the client idle timeout.
func TestIdleKeepAliveClosed(t *testing.T) {
	c := slowConfig(t)
	q, serving, _, cancel, _ := runTCP(t, c)
	defer cancel()
	waitUntil(t, q.ready.Ready)
	conn, err := net.Dial("tcp", serving.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	testnet.IdleClosedAfterOne(t, conn, "x")
}

// TestSlowBodyWithinRequestTimeout: a streamed body that takes longer than
// the head deadline, but arrives within the request timeout, is not cut.
func TestSlowBodyWithinRequestTimeout(t *testing.T) {
	c := slowConfig(t)
	q, serving, _, cancel, _ := runTCP(t, c)
	defer cancel()
	waitUntil(t, q.ready.Ready)
	conn, err := net.Dial("tcp", serving.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := pattern(3 * maxBufferedBody) // streamed, not buffered
	fmt.Fprintf(conn, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", len(body))
	pieces := 4
	for i := range pieces { // 4 x 150ms: twice the 300ms head deadline
		piece := body[i*len(body)/pieces : (i+1)*len(body)/pieces]
		if _, err := conn.Write(piece); err != nil {
			t.Fatalf("writing piece %d: %v", i, err)
		}
		time.Sleep(150 * time.Millisecond) // pacing the client, not an assertion
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	got, _ := io.ReadAll(resp.Body)
	want := fmt.Sprintf("%d %x", len(body), sum(body))
	if resp.StatusCode != 200 || !bytes.Equal(got, []byte(want)) {
		t.Errorf("slow upload = %d %q, want 200 %q", resp.StatusCode, got, want)
	}
	if strings.Contains(string(got), "timeout") {
		t.Errorf("slow upload cut: %q", got)
	}
}
