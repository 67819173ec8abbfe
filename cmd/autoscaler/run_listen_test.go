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
	"syscall"
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

// TestStatsSecret: each run draws a new secret; the token file is created
// with mode 0600 and holds it.
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

// TestStatsSecretFile: the secret goes only into a file created new with
// mode 0600 (whatever the umask), or an earlier run's (this user's, 0600,
// one link), rewritten whole; a symbolic link, a file of another mode or
// owner, a directory or a file with another link is refused with what was
// found and the fix, and keeps what it held.
func TestStatsSecretFile(t *testing.T) {
	const old = "kept as it was\n"
	tests := []struct {
		name    string
		prepare func(t *testing.T, path string)
		want    []string // substrings of the error; none: written
	}{
		{name: "new", prepare: func(*testing.T, string) {}},
		{name: "new under a strict umask", prepare: func(t *testing.T, _ string) {
			prev := syscall.Umask(0o277) // would make 0400
			t.Cleanup(func() { syscall.Umask(prev) })
		}},
		{name: "an earlier run's", prepare: func(t *testing.T, path string) { write(t, path, "a much longer secret of an earlier run\n", 0o600) }},
		{name: "mode 0644", prepare: func(t *testing.T, path string) { write(t, path, old, 0o644) },
			want: []string{"exists with mode 0644, not 0600: others could read the secret", "remove it", "chmod 600"}},
		{name: "a symbolic link", prepare: func(t *testing.T, path string) {
			target := filepath.Join(filepath.Dir(path), "target")
			write(t, target, old, 0o600)
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"is a symbolic link (to ", "never through a link", "remove the link, or name another path"}},
		{name: "a dangling symbolic link", prepare: func(t *testing.T, path string) {
			if err := os.Symlink(filepath.Join(filepath.Dir(path), "target"), path); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"is a symbolic link"}},
		{name: "a directory", prepare: func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"is not a regular file"}},
		{name: "a second link", prepare: func(t *testing.T, path string) {
			write(t, path, old, 0o600)
			if err := os.Link(path, path+".other"); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"exists with 2 links"}},
		{name: "another owner", prepare: func(t *testing.T, path string) {
			write(t, path, old, 0o600)
			if err := os.Chown(path, os.Geteuid()+1, -1); err != nil {
				t.Skipf("cannot give a file to another user here (%v): needs root", err)
			}
		}, want: []string{"belongs to uid ", "not to this process's uid", "remove it"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "stats-token")
			tt.prepare(t, path)
			err := writeSecretFile(path, []byte("s3cret\n"))
			if tt.want == nil {
				fi, serr := os.Lstat(path)
				got, _ := os.ReadFile(path)
				if err != nil || serr != nil || fi.Mode() != 0o600 || string(got) != "s3cret\n" {
					t.Fatalf("error %v; file %v %q; want a regular 0600 file holding the secret alone", err, fi, got)
				}
				return
			}
			if err == nil {
				t.Fatal("written; want it refused")
			}
			for _, w := range append(tt.want, path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, f := range []string{path, filepath.Join(filepath.Dir(path), "target")} {
				if got, err := os.ReadFile(f); err == nil && string(got) != old {
					t.Errorf("%s holds %q after the refusal, want %q", f, got, old)
				}
			}
		})
	}
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
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

// TestKubeFlagsLeaseDuration: --lease-duration that a Lease would store
// rounded is refused at the flag check.
func TestKubeFlagsLeaseDuration(t *testing.T) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	k := addKubeFlags(fs)
	if err := fs.Parse([]string{"--lease-duration=10.5s"}); err != nil {
		t.Fatal(err)
	}
	if err := k.check(); err == nil || !strings.Contains(err.Error(), "--lease-duration 10.5s") || !strings.Contains(err.Error(), "11s") {
		t.Errorf("check() = %v, want --lease-duration 10.5s refused with the fix 11s", err)
	}
}
