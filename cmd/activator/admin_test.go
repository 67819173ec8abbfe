package main

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/activator"
	"ebb.dev/ebb/pkg/activator/filesource"
)

// TestAdminLimits: the admin port closes a stalled head at the head
// deadline and refuses a client past its per-IP cap at once, so slow or
// greedy clients cannot take the probes' place.
func TestAdminLimits(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := activator.DefaultOptions()
	o.Listener, o.Platform = ln, &filesource.Source{Path: "unused.json"}
	a, err := activator.New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := &config{AdminAddress: freeAddr(t), AdminMaxConns: 64, AdminMaxConnsPerIP: 2,
		Activator: activator.Options{HeaderTimeout: 300 * time.Millisecond, IdleTimeout: time.Second}}
	s, err := startAdmin(cfg, a, prometheus.NewRegistry(), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()

	var stalled []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", cfg.AdminAddress)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: a\r\n")
		stalled = append(stalled, c)
	}
	// The third connection from the same IP is over the cap: 429, closed.
	third, err := net.Dial("tcp", cfg.AdminAddress)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	third.SetReadDeadline(time.Now().Add(10 * time.Second))
	answer, _ := io.ReadAll(third)
	if !strings.HasPrefix(string(answer), "HTTP/1.1 429") {
		t.Errorf("third connection from one IP got %q, want 429", answer)
	}
	for _, c := range stalled {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := io.Copy(io.Discard, c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("stalled admin connection still open after 10s (head deadline 300ms)")
		}
	}
	waitFor(t, "/healthz served after the stalled connections closed", func() bool { return get(cfg.AdminAddress, "/healthz") == "ok\n" })
}
