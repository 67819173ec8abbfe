package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"ebb.dev/ebb/pkg/stats"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// TestFloodsBoundedRSS sends HTTP/2 frame floods to the real binaries
// (the queue-proxy, and the activator in front of it), each a process of
// its own on 127.0.0.1, and reads their memory from /proc: a connection
// that sends frames without progress is closed, and no flood makes a
// process grow by more than floodBudget over its idle size measured
// first in the same run. After the floods the Go heap in use (the
// admin port's go_memstats_heap_inuse_bytes) is back within heapSlack of
// its idle figure: what the connections held was let go.
func TestFloodsBoundedRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc (Linux) to read a process's memory")
	}
	const (
		floodBudget = 48 << 20 // the sidecar's budget is 64 MiB in all
		heapSlack   = 8 << 20
	)
	dir := t.TempDir()
	bin := buildBinaries(t, dir)
	as := startFakeAutoscaler(t)
	actAddr, actAdmin, appAddr, qpAddr, qpAdmin := freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
	revs := filepath.Join(dir, "revisions.json")
	writeRevisions(t, revs, qpAddr)
	const secret = "flood-proxy-secret-0123456789"
	startH2App(t, appAddr)
	qp := exec.Command(bin["queueproxy"])
	qp.Env = append(os.Environ(), "QUEUE_SERVING_PORT="+port(qpAddr), "QUEUE_ADMIN_PORT="+port(qpAdmin),
		"USER_PORT="+port(appAddr), "DRAIN_PERIOD_SECONDS=0", "LOG_LEVEL=error",
		"ACTIVATOR_PROXY_SECRET="+stats.NamespaceProxySecret(secret, "default"))
	act := exec.Command(bin["activator"], "--revisions-file", revs, "--address", actAddr, "--admin-address", actAdmin,
		"--autoscaler-url", "http://"+as.addr, "--revisions-poll", "1h", "--pod-name", "activator-flood", "--log-level", "error")
	act.Env = append(os.Environ(), "ACTIVATOR_PROXY_SECRET="+secret)
	for _, c := range []*exec.Cmd{qp, act} {
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _, _ = c.Process.Wait() })
	}
	waitFor(t, "activator ready", func() bool { return get(actAdmin, "/readyz") == "ready\n" })
	waitFor(t, "queue-proxy ready", func() bool { return h2Get(qpAddr) == nil })
	waitFor(t, "a request through the activator", func() bool { return h2Get(actAddr) == nil })

	floods := []struct {
		name string
		send func(w io.Writer) error
		// closes: the server must end the connection before the flood
		// is all sent.
		closes bool
	}{
		{"20 million empty CONTINUATION frames", continuationFlood(20_000_000), true},
		{"1 million empty DATA frames on an open stream", emptyDataFlood(1_000_000), false},
		// Each PING and SETTINGS frame is answered; net/http closes a
		// connection whose answers queue past its bound, which a flood
		// reaches or not depending on how fast the server reads against
		// the sockets' buffers: memory is what is checked.
		{"200,000 PING frames, answers never read", pingFlood(200_000), false},
		{"200,000 SETTINGS frames, answers never read", settingsFlood(200_000), false},
	}
	for _, target := range []struct {
		name, addr, admin string
		pid               int
	}{
		{"queue-proxy", qpAddr, qpAdmin, qp.Process.Pid},
		{"activator", actAddr, actAdmin, act.Process.Pid},
	} {
		idleRSS := procKiB(t, target.pid, "VmRSS") << 10
		idleHeap := metricValue(target.admin, "go_memstats_heap_inuse_bytes")
		for _, f := range floods {
			resetPeak(target.pid)
			start := time.Now()
			sent, closed := flood(t, target.addr, f.send)
			peak := procKiB(t, target.pid, "VmHWM") << 10
			t.Logf("%s, %s: sent %.1f MiB in %v, closed by the server: %v; peak RSS %.1f MiB (idle %.1f MiB)",
				target.name, f.name, float64(sent)/(1<<20), time.Since(start).Round(time.Millisecond), closed,
				float64(peak)/(1<<20), float64(idleRSS)/(1<<20))
			if f.closes && !closed {
				t.Errorf("%s, %s: the connection was not closed", target.name, f.name)
			}
			if peak > idleRSS+floodBudget {
				t.Errorf("%s, %s: peak RSS %d MiB, idle %d MiB: grew by more than %d MiB",
					target.name, f.name, peak>>20, idleRSS>>20, floodBudget>>20)
			}
		}
		// Many connections, each in an open block of 8 KiB held by the
		// guard, then gone.
		resetPeak(target.pid)
		conns := openBlocks(t, target.addr, 300)
		held := procKiB(t, target.pid, "VmHWM") << 10
		for _, c := range conns {
			_ = c.Close()
		}
		t.Logf("%s, 300 connections each in an open 8 KiB header block: peak RSS %.1f MiB (idle %.1f MiB)",
			target.name, float64(held)/(1<<20), float64(idleRSS)/(1<<20))
		if held > idleRSS+floodBudget {
			t.Errorf("%s, 300 open header blocks: peak RSS %d MiB, idle %d MiB: grew by more than %d MiB",
				target.name, held>>20, idleRSS>>20, floodBudget>>20)
		}
		if err := h2Get(target.addr); err != nil {
			t.Errorf("%s after the floods: a request failed: %v", target.name, err)
		}
		var heap float64
		waitFor(t, target.name+"'s heap back near its idle size", func() bool {
			heap = metricValue(target.admin, "go_memstats_heap_inuse_bytes")
			return heap > 0 && heap <= idleHeap+heapSlack
		})
		t.Logf("%s: heap in use %.1f MiB idle, %.1f MiB after the floods", target.name, idleHeap/(1<<20), heap/(1<<20))
	}
}

// startH2App serves the app in the test's process, HTTP/1.1 and h2c (the
// queue-proxy sends HTTP/2 requests on as h2c).
func startH2App(t *testing.T, addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	s := &http.Server{Protocols: &p, ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "hello")
	})}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Close() })
}

// flood dials addr, sends the preface and what send writes (it stops at
// the first write error: the server closed), then reads what the server
// answers until it closes or is quiet for 2 s. It returns the bytes sent
// and whether the server closed the connection.
func flood(t *testing.T, addr string, send func(io.Writer) error) (int64, bool) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cw := &countWriter{w: conn}
	_ = conn.SetWriteDeadline(time.Now().Add(60 * time.Second))
	bw := bufio.NewWriterSize(cw, 64<<10)
	writeErr := func() error {
		if _, err := bw.WriteString(http2.ClientPreface); err != nil {
			return err
		}
		if err := http2.NewFramer(bw, nil).WriteSettings(); err != nil {
			return err
		}
		if err := send(bw); err != nil {
			return err
		}
		return bw.Flush()
	}()
	// Drain what the server sent (its answers were not read while the
	// flood went out, as a flooding client would not).
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, readErr := io.Copy(io.Discard, conn)
	closed := writeErr != nil || (readErr == nil) || !errors.Is(readErr, os.ErrDeadlineExceeded)
	return cw.n, closed
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// requestBlock is an HPACK block of a GET for the test's revision.
func requestBlock(extra ...string) []byte {
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	fields := append([]string{":method", "GET", ":scheme", "http", ":authority", "hello.default", ":path", "/"}, extra...)
	for i := 0; i+1 < len(fields); i += 2 {
		_ = enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	return b.Bytes()
}

func continuationFlood(n int) func(io.Writer) error {
	return func(w io.Writer) error {
		fr := http2.NewFramer(w, nil)
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: requestBlock()[:2]}); err != nil {
			return err
		}
		for range n {
			if err := fr.WriteContinuation(1, false, nil); err != nil {
				return err
			}
		}
		return nil
	}
}

func emptyDataFlood(n int) func(io.Writer) error {
	return func(w io.Writer) error {
		fr := http2.NewFramer(w, nil)
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: requestBlock(), EndHeaders: true}); err != nil {
			return err
		}
		for range n {
			if err := fr.WriteData(1, false, nil); err != nil {
				return err
			}
		}
		return fr.WriteData(1, true, nil)
	}
}

func pingFlood(n int) func(io.Writer) error {
	return func(w io.Writer) error {
		fr := http2.NewFramer(w, nil)
		for i := range n {
			if err := fr.WritePing(false, [8]byte{byte(i), byte(i >> 8), byte(i >> 16)}); err != nil {
				return err
			}
		}
		return nil
	}
}

func settingsFlood(n int) func(io.Writer) error {
	return func(w io.Writer) error {
		fr := http2.NewFramer(w, nil)
		for range n {
			if err := fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 65535}); err != nil {
				return err
			}
		}
		return nil
	}
}

// openBlocks opens n connections, each with a header block of 8 KiB in
// pieces that does not end; the caller closes them.
func openBlocks(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	var conns []net.Conn
	piece := bytes.Repeat([]byte{0x40}, 1024) // a literal's start: the block cannot end here
	for range n {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		bw := bufio.NewWriter(c)
		_, _ = bw.WriteString(http2.ClientPreface)
		fr := http2.NewFramer(bw, nil)
		_ = fr.WriteSettings()
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: piece})
		for range 7 {
			_ = fr.WriteContinuation(1, false, piece)
		}
		if err := bw.Flush(); err != nil {
			t.Fatalf("opening block %d: %v", len(conns), err)
		}
	}
	time.Sleep(500 * time.Millisecond) // let the servers read the blocks
	return conns
}

// h2Get sends one HTTP/2 request (prior knowledge) and wants a 200.
func h2Get(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	cc, err := (&http2.Transport{AllowHTTP: true}).NewClientConn(conn)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodGet, "http://hello.default/", nil)
	if err != nil {
		return err
	}
	resp, err := cc.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// procKiB reads a field (in kB) of /proc/PID/status.
func procKiB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("/proc/%d/status %s: %v", pid, field, err)
			}
			return n
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}

// resetPeak resets the process's peak RSS (VmHWM) to its current RSS.
func resetPeak(pid int) {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// metricValue is the value of an unlabelled metric on an admin address's
// /metrics (0 if absent).
func metricValue(admin, name string) float64 {
	for _, line := range strings.Split(get(admin, "/metrics"), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return 0
}
