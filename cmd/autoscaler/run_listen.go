package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"

	"ebb.dev/ebb/pkg/autoscaler"
)

// serveFlags are the limits of the autoscaler's HTTP listeners (the admin
// port: API, dashboard, /events, /metrics, and /v1/stats unless --stats
// gives the stats a port of their own).
type serveFlags struct {
	stats             string
	readHeaderTimeout time.Duration
	readTimeout       time.Duration
	writeTimeout      time.Duration
	idleTimeout       time.Duration
	maxConns          int
	maxEventStreams   int
	statsRate         float64
	statsBurst        int
}

func addServeFlags(fs *flag.FlagSet) *serveFlags {
	s := &serveFlags{}
	fs.StringVar(&s.stats, "stats", "", "address of a listener for the activators' POST /v1/stats alone (empty: /v1/stats is served on --admin)")
	fs.DurationVar(&s.readHeaderTimeout, "read-header-timeout", 5*time.Second,
		"longest wait for a request's head on the admin and stats listeners (also the first request of a connection)")
	fs.DurationVar(&s.readTimeout, "read-timeout", 30*time.Second, "longest read of a whole request, head and body")
	fs.DurationVar(&s.writeTimeout, "write-timeout", 30*time.Second, "longest write of an answer (an /events stream instead bounds each update to 10s)")
	fs.DurationVar(&s.idleTimeout, "idle-timeout", 2*time.Minute, "longest wait for the next request on a keep-alive connection")
	fs.IntVar(&s.maxConns, "max-conns", 1024, "connections served at once per listener; more wait to be accepted")
	fs.IntVar(&s.maxEventStreams, "max-event-streams", autoscaler.DefaultMaxEventStreams, "dashboard /events streams at once; more are answered 503")
	fs.Float64Var(&s.statsRate, "stats-rate", autoscaler.DefaultStatsRate, "stats one activator pod may push per second; more are answered 429")
	fs.IntVar(&s.statsBurst, "stats-burst", autoscaler.DefaultStatsBurst, "stats one activator pod may push at once (at least 4096, one full report)")
	return s
}

// check reports every flag that breaks its rule.
func (s *serveFlags) check() error {
	var errs []error
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"--read-header-timeout", s.readHeaderTimeout}, {"--read-timeout", s.readTimeout},
		{"--write-timeout", s.writeTimeout}, {"--idle-timeout", s.idleTimeout}} {
		if d.d <= 0 {
			errs = append(errs, fmt.Errorf("%s %v: must be > 0", d.name, d.d))
		}
	}
	if s.maxConns < 1 || s.maxEventStreams < 1 {
		errs = append(errs, fmt.Errorf("--max-conns %d and --max-event-streams %d: must be >= 1", s.maxConns, s.maxEventStreams))
	}
	if s.statsRate <= 0 || s.statsBurst < 4096 {
		errs = append(errs, fmt.Errorf("--stats-rate %g must be > 0 and --stats-burst %d >= 4096 (one full report)", s.statsRate, s.statsBurst))
	}
	return errors.Join(errs...)
}

// options are the autoscaler's settings from the flags.
func (s *serveFlags) options(o autoscaler.Options) autoscaler.Options {
	o.StatsRate, o.StatsBurst, o.MaxEventStreams = s.statsRate, s.statsBurst, s.maxEventStreams
	return o
}

// listen opens a listener that accepts at most --max-conns connections at
// once, and the server for it with the timeouts.
func (s *serveFlags) listen(flagName, addr string, h http.Handler) (net.Listener, *http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", flagName, addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: s.readHeaderTimeout, ReadTimeout: s.readTimeout,
		WriteTimeout: s.writeTimeout, IdleTimeout: s.idleTimeout, MaxHeaderBytes: 64 << 10}
	return netutil.LimitListener(ln, s.maxConns), srv, nil
}

// statsMoved answers /v1/stats on the admin port when the stats have a
// port of their own, so a misconfigured activator learns where to go.
func statsMoved(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, "this autoscaler takes activator stats on its stats port (--stats), not on the admin port", http.StatusNotFound)
}

// newStatsSecret draws the per-run secret of `autoscaler run`'s stats
// endpoint: 32 random bytes, hex. With a file name it is also written
// there for an activator started outside this process: in a file created
// new with mode 0600, or an earlier run's (writeSecretFile).
func newStatsSecret(file string) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("drawing the stats secret: %w", err)
	}
	secret := hex.EncodeToString(b)
	if file != "" {
		if err := writeSecretFile(file, []byte(secret+"\n")); err != nil {
			return "", fmt.Errorf("--stats-token-file %w", err)
		}
	}
	return secret, nil
}

// servers are the HTTP servers of a run, served until shutdown.
type servers []*http.Server

// serve starts serving ln with srv and adds srv to the list.
func (ss *servers) serve(ln net.Listener, srv *http.Server) {
	*ss = append(*ss, srv)
	go srv.Serve(ln) // ends with ErrServerClosed at shutdown
}

// shutdown stops every server, waiting up to 5s for their requests.
func (ss servers) shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var errs []error
	for _, s := range ss {
		errs = append(errs, s.Shutdown(ctx))
	}
	return errors.Join(errs...)
}
