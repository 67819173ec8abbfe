package statsclient

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"ebb.dev/ebb/pkg/stats"
)

// autoscaler is a fake /v1/stats endpoint.
type autoscaler struct {
	mu      sync.Mutex
	got     [][]stats.Stat
	status  int
	arrived chan struct{}
}

func startAutoscaler(t *testing.T) (*autoscaler, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	as := &autoscaler{status: 204, arrived: make(chan struct{}, 100)}
	s := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Path()) != Path || string(ctx.Request.Header.ContentType()) != stats.BatchContentType || !ctx.IsPost() {
			ctx.Error("bad request", 400)
			return
		}
		batch, err := stats.ParseBatch(ctx.PostBody(), 100)
		if err != nil {
			ctx.Error(err.Error(), 400)
			return
		}
		as.mu.Lock()
		as.got = append(as.got, batch)
		ctx.SetStatusCode(as.status)
		as.mu.Unlock()
		as.arrived <- struct{}{}
	}}
	go s.Serve(ln)
	t.Cleanup(func() { s.Shutdown() })
	return as, "http://" + ln.Addr().String()
}

func stat(rev string, c float64) stats.Stat {
	return stats.Stat{Source: stats.SourceActivator, PodName: "act", Revision: rev, Time: time.Unix(5, 0), Period: time.Second,
		AverageConcurrency: c, RequestCount: 3}
}

func TestReportsAndPokes(t *testing.T) {
	as, url := startAutoscaler(t)
	c, err := New(Options{URL: url + "/"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	c.Poke(stat("default/cold", 1))
	<-as.arrived
	c.Report([]stats.Stat{stat("default/a", 2), stat("default/b", 0.5)})
	<-as.arrived
	cancel()
	<-done
	want := [][]stats.Stat{{stat("default/cold", 1)}, {stat("default/a", 2), stat("default/b", 0.5)}}
	if diff := cmp.Diff(want, as.got); diff != "" {
		t.Errorf("received (-want +got):\n%s", diff)
	}
}

// TestFailuresNeverBlock: with the autoscaler down, Report and Poke
// return at once however many are sent, and one Warn says so.
func TestFailuresNeverBlock(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	c, err := New(Options{URL: "http://127.0.0.1:1", Timeout: 50 * time.Millisecond, QueueLength: 2, Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range 1000 {
		c.Report([]stats.Stat{stat("default/a", 1)})
		c.Poke(stat("default/a", 1))
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("queueing 2000 stats took %v with nobody sending", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	for logs.Len() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	entries := logs.AllUntimed()
	if len(entries) != 1 || !strings.Contains(entries[0].Message, "cannot report to the autoscaler") {
		t.Fatalf("warnings = %v, want exactly one", entries)
	}
	if dropped := entries[0].ContextMap()["dropped_stats"]; dropped.(int64) < 1900 {
		t.Errorf("dropped_stats = %v, want most of the 2000", dropped)
	}
}

func TestNewRejectsBadURL(t *testing.T) {
	for _, u := range []string{"", "autoscaler:8080", "ftp://x", "http://"} {
		if _, err := New(Options{URL: u}); err == nil {
			t.Errorf("New(%q) succeeded", u)
		}
	}
}
