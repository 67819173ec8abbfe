package statsclient

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"ebb.dev/ebb/pkg/activator"
	"ebb.dev/ebb/pkg/stats"
)

// autoscaler is a fake /v1/stats endpoint.
type autoscaler struct {
	mu      sync.Mutex
	got     [][]stats.Stat
	auth    []string // the Authorization header of each POST
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
		if string(ctx.Path()) != stats.BatchPath || string(ctx.Request.Header.ContentType()) != stats.BatchContentType || !ctx.IsPost() {
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
		as.auth = append(as.auth, string(ctx.Request.Header.Peek("Authorization")))
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

// fakeClock is an activator.Clock the test steps; no ticker is used here.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTicker(time.Duration) activator.Ticker { panic("no ticker in these tests") }

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestTokenFileRotation: the token file's content goes out as a bearer
// token; a rotated file is picked up after TokenReload, or at once after a
// 401; a missing file fails the POST without naming the token.
func TestTokenFileRotation(t *testing.T) {
	as, url := startAutoscaler(t)
	file := filepath.Join(t.TempDir(), "token")
	write := func(tok string) {
		if err := os.WriteFile(file, []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("tok-1")
	clk := &fakeClock{now: time.Unix(100, 0)}
	c, err := New(Options{URL: url, TokenFile: file, TokenReload: time.Minute, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	send := func() {
		t.Helper()
		if _, err := c.send(c.target, []stats.Stat{stat("default/a", 1)}); err != nil && !strings.Contains(err.Error(), "401") {
			t.Fatal(err)
		}
	}
	send()
	write("tok-2")
	send() // within TokenReload: the cached token
	clk.advance(time.Minute)
	send() // read again
	write("tok-3")
	as.mu.Lock()
	as.status = 401
	as.mu.Unlock()
	send() // refused: read again next time
	as.mu.Lock()
	as.status = 204
	as.mu.Unlock()
	send()
	want := []string{"Bearer tok-1", "Bearer tok-1", "Bearer tok-2", "Bearer tok-2", "Bearer tok-3"}
	if diff := cmp.Diff(want, as.auth); diff != "" {
		t.Errorf("Authorization headers (-want +got):\n%s", diff)
	}
	os.Remove(file)
	c.token.expire()
	_, err = c.send(c.target, []stats.Stat{stat("default/a", 1)})
	if err == nil || !strings.Contains(err.Error(), "reading the stats token") || strings.Contains(err.Error(), "tok-3") {
		t.Errorf("missing token file: %v, want an error naming the file, not the token", err)
	}
}

func TestFixedTokenAndNone(t *testing.T) {
	as, url := startAutoscaler(t)
	for _, tok := range []string{"secret", ""} {
		c, err := New(Options{URL: url, Token: tok})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.send(c.target, []stats.Stat{stat("default/a", 1)}); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"Bearer secret", ""}, as.auth); diff != "" {
		t.Errorf("Authorization headers (-want +got):\n%s", diff)
	}
}
