package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ebb.dev/ebb/pkg/autoscaler"
)

func TestServeFlagsCheck(t *testing.T) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	s := addServeFlags(fs)
	if err := fs.Parse([]string{"--read-timeout=0s", "--max-conns=0", "--stats-burst=10"}); err != nil {
		t.Fatal(err)
	}
	err := s.check()
	for _, want := range []string{"--read-timeout 0s: must be > 0", "--max-conns 0", "--stats-burst 10 >= 4096"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("check() = %v, want it to name %q", err, want)
		}
	}
	fs = flag.NewFlagSet("run", flag.ContinueOnError)
	if err := addServeFlags(fs).check(); err != nil {
		t.Errorf("the defaults do not check: %v", err)
	}
}

// TestListenerClosesStalledConnections: with every connection slot held
// by a client that never finishes its head, the read-header timeout frees
// them and a new request is served.
func TestListenerClosesStalledConnections(t *testing.T) {
	s := &serveFlags{readHeaderTimeout: 300 * time.Millisecond, readTimeout: time.Second, writeTimeout: time.Second,
		idleTimeout: time.Second, maxConns: 2}
	ln, srv, err := s.listen("--admin", "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok")
	}))
	if err != nil {
		t.Fatal(err)
	}
	var srvs servers
	srvs.serve(ln, srv)
	defer srvs.shutdown()
	var stalled []net.Conn
	for range s.maxConns {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n") // never finished
		stalled = append(stalled, c)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	began := time.Now()
	resp, err := client.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatalf("a new request while the slots are held: %v", err)
	}
	resp.Body.Close()
	t.Logf("served after %v with %d stalled connections holding every slot", time.Since(began).Round(time.Millisecond), len(stalled))
	for i, c := range stalled {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadAll(c); err != nil {
			t.Errorf("stalled connection %d: %v, want it closed by the server", i, err)
		}
	}
}

func TestStatsSecret(t *testing.T) {
	file := filepath.Join(t.TempDir(), "stats-token")
	a, err := newStatsSecret(file)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := newStatsSecret("")
	if len(a) != 64 || a == b {
		t.Errorf("secrets %q and %q: want 64 hex characters, different each run", a, b)
	}
	fi, err := os.Stat(file)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v, want mode 0600", fi, err)
	}
	got, _ := os.ReadFile(file)
	if strings.TrimSpace(string(got)) != a {
		t.Errorf("token file holds %q, want the secret", got)
	}
}

// TestSimulateHugeLoadPrintsJSON: a scenario claiming 1e308 requests in
// flight still prints a JSON line per decision, with finite numbers.
func TestSimulateHugeLoadPrintsJSON(t *testing.T) {
	file := filepath.Join(t.TempDir(), "huge.json")
	scen := `{"samples": [{"t": 0, "concurrency": 1, "ready": 1}, {"t": 1, "concurrency": 1e308}, {"t": 2, "concurrency": 1e308},
		{"t": 3, "concurrency": 1}, {"t": 4, "concurrency": 1}]}`
	if err := os.WriteFile(file, []byte(scen), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"simulate", "--explain", file}, nil, &out, &errOut); code != 0 {
		t.Fatalf("simulate exited %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	refused := false
	for i, l := range lines {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("line %d is not JSON: %v: %s", i, err, l)
		}
		for _, k := range []string{"stable", "panicAverage"} {
			if f, ok := v[k].(float64); ok && (math.IsInf(f, 0) || f > 1e12) {
				t.Errorf("line %d: %s = %v", i, k, f)
			}
		}
		refused = refused || strings.Contains(l, "MetricRefused")
		if strings.Contains(l, "Inf") || strings.Contains(l, "2147483647") {
			t.Errorf("line %d prints a non-finite count: %s", i, l)
		}
	}
	if !refused {
		t.Errorf("no decision says the 1e308 seconds were refused:\n%s", out.String())
	}
}

// TestEventStreamOutlivesTimeouts: an /events stream is not cut by the
// server's read and write timeouts (it gets a deadline per update).
func TestEventStreamOutlivesTimeouts(t *testing.T) {
	s := &serveFlags{readHeaderTimeout: 200 * time.Millisecond, readTimeout: 200 * time.Millisecond,
		writeTimeout: 200 * time.Millisecond, idleTimeout: time.Second, maxConns: 4}
	as := autoscaler.New(autoscaler.Options{MaxEventStreams: 1})
	ln, srv, err := s.listen("--admin", "127.0.0.1:0", as.Handler())
	if err != nil {
		t.Fatal(err)
	}
	var srvs servers
	srvs.serve(ln, srv)
	defer srvs.shutdown()
	resp, err := http.Get("http://" + ln.Addr().String() + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	began := time.Now()
	for updates := 0; updates < 2; {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream cut after %v and %d updates: %v", time.Since(began), updates, err)
		}
		if line == "event: update\n" {
			updates++
		}
	}
	if d := time.Since(began); d < 4*s.readTimeout {
		t.Errorf("two updates within %v: want them a second apart, past the timeouts", d)
	}
}
