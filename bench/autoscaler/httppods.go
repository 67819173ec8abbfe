package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"time"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/stats"
)

// httpPlatform gives each revision its own pods, each a fake queue-proxy
// of the child process with an address of its own.
type httpPlatform struct {
	revisions int
	pods      map[autoscaler.RevisionKey][]autoscaler.Pod
}

func (p *httpPlatform) ReadyPods(_ context.Context, key autoscaler.RevisionKey) ([]autoscaler.Pod, error) {
	return p.pods[key], nil
}
func (p *httpPlatform) Scale(context.Context, autoscaler.RevisionKey, int32) error { return nil }
func (p *httpPlatform) SetActivatorInPath(context.Context, autoscaler.RevisionKey, bool) error {
	return nil
}

// startFakePods starts a child process serving n fake queue-proxies (in
// a process of its own, so that its CPU is not the autoscaler's) and
// returns the platform of their revisions, -pods pods each, and how to
// stop the child.
func startFakePods(n int) (*httpPlatform, func(), error) {
	cmd := exec.Command(os.Args[0], "-serve-pods", strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe() // the child ends when it closes
	if err != nil {
		return nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("starting the fake queue-proxies: %w", err)
	}
	stop := func() { in.Close(); cmd.Wait() }
	var addrs []string
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "ready" {
		addrs = append(addrs, sc.Text())
	}
	if len(addrs) != n {
		stop()
		return nil, nil, fmt.Errorf("the fake queue-proxies gave %d addresses, want %d", len(addrs), n)
	}
	p := &httpPlatform{pods: map[autoscaler.RevisionKey][]autoscaler.Pod{}}
	started := time.Now().Add(-time.Hour)
	for i, addr := range addrs {
		key := autoscaler.RevisionKey{Namespace: "bench", Name: "rev-" + strconv.Itoa(i / *podCount)}
		p.pods[key] = append(p.pods[key], autoscaler.Pod{Name: "pod-" + strconv.Itoa(i), StatsAddr: addr, Started: started})
	}
	p.revisions = len(p.pods)
	return p, stop, nil
}

// serveFakePods is the child: it listens on 127.0.0.1 once per pod,
// prints the addresses and "ready", serves GET /stats with a load that
// varies with the second, and exits when its standard input closes.
func serveFakePods(arg string) error {
	n, err := strconv.Atoi(arg)
	if err != nil || n < 1 {
		return fmt.Errorf("-serve-pods %q: want a count", arg)
	}
	srv := &http.Server{Handler: http.HandlerFunc(serveStat), ReadHeaderTimeout: 5 * time.Second}
	w := bufio.NewWriter(os.Stdout)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("listening: %w (raise the open files limit for more pods)", err)
		}
		go srv.Serve(l)
		fmt.Fprintln(w, l.Addr().String())
	}
	fmt.Fprintln(w, "ready")
	w.Flush()
	io.Copy(io.Discard, os.Stdin)
	return srv.Close()
}

func serveStat(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != stats.Path {
		http.NotFound(w, r)
		return
	}
	now := time.Now()
	sec := now.Unix()
	st := stats.Stat{Source: stats.SourceQueueProxy, PodName: "pod", Time: now, Period: time.Second,
		AverageConcurrency: float64(50 + sec%40), RequestCount: uint64(100 + sec%17)}
	b, err := st.MarshalBinary()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", stats.ContentType)
	w.Write(b)
}
