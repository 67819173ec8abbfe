// Command bench measures the activator on this machine, with real
// processes on 127.0.0.1 and wrk/hey as the load, beside baselines run in
// the same rounds (in slices whose order rotates, bench/internal/paired):
//
//	bench warm       throughput, CPU per request, latency and memory of the
//	                 warm path (activator -> app, and activator -> queue-proxy
//	                 -> app) against the app alone and a bare fasthttp proxy
//	bench coldstart  first-request latency minus the app's start-up time
//	bench soak       memory and answers under sustained overload
//
// Every process it starts is killed (by PID) on exit; every load run is
// bounded in time. Knobs are environment variables, listed by -h.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	if len(os.Args) < 2 || strings.HasPrefix(os.Args[1], "-") {
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage: bench warm|coldstart|soak ...

environment:
  ROUNDS=4            warm: rounds
  DURATION=5s         warm: each target's wrk -c50 time per round, in slices;
                      the length of each one-client run
  SLICE=1s            warm: a slice: every target runs once per slice, the
                      order rotating; ratios are taken within slices
  CONNS=50            warm: wrk connections
  COLD_RUNS=20        coldstart: cold starts per path
  READY_AFTER=500ms   coldstart: the app's start-up time
  SOAK_DURATION=5m    soak: length of the hey -c 200 run
  SOAK_HEAVY=60s      soak: length of the extra 2000-client POST run (0: skip)
  RSS_CEILING_MIB=100 soak: the documented memory ceiling
  BASE_PORT=18200     first port used
  BASELINE_REF=       warm: also run the activator and queue-proxy built
                      from this git commit, in the same rounds (ratios)
`)
}

func run(ctx context.Context, cmds []string) error {
	if _, err := lookPath("wrk"); err != nil {
		return fmt.Errorf("wrk is not installed (apt-get install -y wrk)")
	}
	if err := findHey(ctx); err != nil {
		return err
	}
	env, err := newEnv(ctx)
	if err != nil {
		return err
	}
	defer env.cleanup()
	var errs []error
	for _, c := range cmds {
		var err error
		switch c {
		case "warm":
			err = warm(ctx, env)
		case "coldstart":
			err = coldStart(ctx, env)
		case "soak":
			err = soak(ctx, env)
		default:
			usage()
			return fmt.Errorf("unknown benchmark %q", c)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c, err))
		}
	}
	return errors.Join(errs...)
}
