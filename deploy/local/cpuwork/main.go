// Command cpuwork is the CPU-bound sample app of the local platform, the
// php-apache of Kubernetes' HPA walkthrough: an HTTP server on
// 127.0.0.1:$PORT that spends a fixed amount of CPU time on every request
// (measured on the thread's own CPU clock, so a busy machine makes a
// request slower, not cheaper) and answers "OK!". With --hold-mib it
// also keeps that much memory allocated and touched from its start (a
// working set for memory targets).
//
//	cpuwork --cpu 10ms [--hold-mib 64]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "cpuwork:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("cpuwork", flag.ContinueOnError)
	cpu := fs.Duration("cpu", 10*time.Millisecond, "CPU time to spend on each request")
	holdMiB := fs.Int("hold-mib", 0, "MiB of memory to keep allocated and touched (0: none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cpu < 0 || *cpu > 10*time.Second {
		return fmt.Errorf("--cpu %v: must be within [0, 10s]", *cpu)
	}
	if *holdMiB < 0 || *holdMiB > 4096 {
		return fmt.Errorf("--hold-mib %d: must be within [0, 4096]", *holdMiB)
	}
	held = hold(*holdMiB)
	port, err := strconv.Atoi(os.Getenv("PORT"))
	if err != nil || port < 1 || port > 65535 {
		return fmt.Errorf("PORT=%q: must be a port number in [1, 65535]; the platform sets it", os.Getenv("PORT"))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	srv := &http.Server{Addr: "127.0.0.1:" + strconv.Itoa(port), Handler: handler(*cpu), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func handler(cpu time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		burn(cpu)
		w.Write([]byte("OK!"))
	})
}

// held is the memory --hold-mib keeps.
var held []byte

// hold allocates mib MiB and writes every page, so all of it is resident.
func hold(mib int) []byte {
	b := make([]byte, mib<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	return b
}

// sink keeps the work from being optimized away.
var sink float64

// burn spins until the calling thread has used d of CPU time.
func burn(d time.Duration) {
	if d <= 0 {
		return
	}
	runtime.LockOSThread() // the thread's CPU clock must be this goroutine's
	defer runtime.UnlockOSThread()
	start := threadCPU()
	x := 1.0001
	for threadCPU()-start < d {
		for range 2000 {
			x = x*1.0000001 + 1e-9
		}
	}
	sink = x
}

// threadCPU is the calling thread's CPU time (user + system).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(rusageThread, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rusageThread is Linux's RUSAGE_THREAD.
const rusageThread = 1
