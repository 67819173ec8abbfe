package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"ebb.dev/ebb/internal/heytest"
	"ebb.dev/ebb/pkg/stats"
)

// TestEndToEnd runs the real binary in front of a real app process on
// 127.0.0.1, drives it with hey, reads /stats and /metrics, then sends
// SIGTERM with a request in flight and checks the drain.
func TestEndToEnd(t *testing.T) {
	hey := heytest.Path(t)
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(os.PathSeparator), "ebb.dev/ebb/cmd/queueproxy", "ebb.dev/ebb/bench/queueproxy/app")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	appPort, servingPort, adminPort := freePort(t), freePort(t), freePort(t)
	app := start(t, exec.Command(filepath.Join(bin, "app"), "-addr", "127.0.0.1:"+appPort))
	qp := exec.Command(filepath.Join(bin, "queueproxy"))
	qp.Env = append(os.Environ(), "USER_PORT="+appPort, "QUEUE_SERVING_PORT="+servingPort, "QUEUE_ADMIN_PORT="+adminPort,
		"CONTAINER_CONCURRENCY=4", "DRAIN_PERIOD_SECONDS=1", "SERVING_POD=e2e-pod", "LOG_LEVEL=warn")
	start(t, qp)
	defer func() { _ = app.Process.Kill() }()

	admin := "http://127.0.0.1:" + adminPort
	serving := "http://127.0.0.1:" + servingPort
	eventually(t, "the queue-proxy becomes ready", func() bool { return status(admin+"/healthz") == 200 })

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := heytest.Run(ctx, hey, "-n", "2000", "-c", "8", serving+"/")
	if err != nil {
		t.Fatal(err)
	}
	if res.Codes[200] != 2000 || res.Total != 2000 {
		t.Fatalf("hey: responses by code %v, want 2000 with status 200:\n%s", res.Codes, res.Output)
	}

	eventually(t, "/metrics counts the 2000 requests", func() bool {
		return metric(t, admin, "ebb_queue_requests_total") >= 2000
	})
	var st stats.Stat
	if err := st.UnmarshalBinary([]byte(get(t, admin+"/stats"))); err != nil {
		t.Fatalf("/stats does not decode: %v", err)
	}
	if st.PodName != "e2e-pod" || st.Source != stats.SourceQueueProxy || st.Period <= 0 {
		t.Errorf("/stats = %+v, want pod e2e-pod, source queue-proxy, a period", st)
	}

	// Drain: a request in flight at SIGTERM completes; readiness fails; exit 0.
	slow := make(chan int, 1)
	go func() { slow <- status(serving + "/?sleep=2s") }()
	eventually(t, "the slow request is in flight", func() bool { return metric(t, admin, "ebb_queue_requests_in_flight") >= 1 })
	if err := qp.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	eventually(t, "readiness fails after SIGTERM", func() bool { return status(admin+"/healthz") == 503 })
	if s := <-slow; s != 200 {
		t.Errorf("request in flight at SIGTERM finished with %d, want 200", s)
	}
	if err := qp.Wait(); err != nil {
		t.Errorf("queue-proxy exit after SIGTERM: %v, want status 0", err)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

func start(t *testing.T, cmd *exec.Cmd) *exec.Cmd {
	t.Helper()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_, _ = cmd.Process.Wait()
		}
	})
	return cmd
}

var client = &http.Client{Timeout: 20 * time.Second}

func status(url string) int {
	resp, err := client.Get(url)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// metric reads one unlabelled sample from the Prometheus text on /metrics.
func metric(t *testing.T, admin, name string) float64 {
	for _, line := range strings.Split(get(t, admin+"/metrics"), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}

// eventually polls cond with a bound generous enough for a loaded machine.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(fmt.Sprintf("timed out waiting until %s", what))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
