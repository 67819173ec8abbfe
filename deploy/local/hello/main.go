// Command hello is the sample app of the local platform: an HTTP server on
// 127.0.0.1:$PORT that answers every request after a fixed latency, and
// starts listening only after a start-up delay, like a real app warming up.
// With --exit-after N it exits (status 1) once it has answered N requests:
// an app that crashes under load, for the tests of what Ebb does then.
// With --keep-per-request B it keeps B bytes for every request it answers
// and never frees them: an app that leaks until its memory limit kills it.
// A request's ?latency= (a Go duration, at most maxLatency) answers that
// one after its own latency instead: a long request among short ones.
//
//	hello --latency 100ms --startup-delay 500ms
//	curl "http://127.0.0.1:8080/?latency=30s"
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("hello", flag.ContinueOnError)
	latency := fs.Duration("latency", 100*time.Millisecond, "time to answer each request")
	startup := fs.Duration("startup-delay", 0, "time before the server listens")
	exitAfter := fs.Int64("exit-after", 0, "exit (status 1) once this many requests were answered: a crashing app (0: never)")
	keep := fs.Int("keep-per-request", 0, "bytes kept (never freed) per request answered: an app that leaks until its memory limit kills it (0: none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *keep < 0 {
		return fmt.Errorf("--keep-per-request %d: must be >= 0 (0: keep nothing)", *keep)
	}
	port, err := strconv.Atoi(os.Getenv("PORT"))
	if err != nil || port < 1 || port > 65535 {
		return fmt.Errorf("PORT=%q: must be a port number in [1, 65535]; the platform sets it", os.Getenv("PORT"))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	select {
	case <-time.After(*startup):
	case <-ctx.Done():
		return nil
	}
	if *exitAfter < 0 {
		return fmt.Errorf("--exit-after %d: must be >= 0 (0: never)", *exitAfter)
	}
	host, _ := os.Hostname()
	crash := make(chan struct{})
	srv := &http.Server{Addr: "127.0.0.1:" + strconv.Itoa(port), Handler: handler(*latency, host, *exitAfter, *keep, crash),
		ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case err := <-errc:
		return err
	case <-crash: // no drain: a crash
		return fmt.Errorf("exiting after %d requests (--exit-after)", *exitAfter)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// maxLatency bounds a request's own ?latency=.
const maxLatency = 10 * time.Minute

// requestLatency is r's ?latency= if it has one, else latency.
func requestLatency(r *http.Request, latency time.Duration) (time.Duration, error) {
	v := r.URL.Query().Get("latency")
	if v == "" {
		return latency, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > maxLatency {
		return 0, fmt.Errorf("?latency=%q: must be a Go duration from 0 to %v, such as 30s", v, maxLatency)
	}
	return d, nil
}

// handler answers after latency (or the request's ?latency=); with
// exitAfter > 0, the exitAfter-th answer closes crash; with keep > 0 every
// answer keeps keep more bytes (written to, so that they are resident).
func handler(latency time.Duration, host string, exitAfter int64, keep int, crash chan<- struct{}) http.Handler {
	pid := strconv.Itoa(os.Getpid())
	var answered atomic.Int64
	var mu sync.Mutex
	var kept [][]byte // guarded by mu: the leak
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wait, err := requestLatency(r, latency)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case <-time.After(wait):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "hello from %s (pid %s)\n", host, pid)
		if keep > 0 {
			b := make([]byte, keep)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			mu.Lock()
			kept = append(kept, b)
			mu.Unlock()
		}
		if exitAfter > 0 && answered.Add(1) == exitAfter {
			_ = http.NewResponseController(w).Flush() // the answer out before the exit; a failed flush loses only it
			close(crash)
		}
	})
}
