// Command queueproxy is the sidecar in front of every replica: it proxies
// to the app on 127.0.0.1:$USER_PORT with a hard concurrency limit, measures
// load for the autoscaler, probes the app and drains on SIGTERM. Its
// configuration is documented in pkg/queueproxy (doc.go) and
// docs/queueproxy.md; `queueproxy --help` lists it too.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"ebb.dev/ebb/pkg/queueproxy"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "queueproxy:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	cfg, err := queueproxy.Load(args, os.LookupEnv)
	if errors.Is(err, flag.ErrHelp) {
		queueproxy.Usage(os.Stdout)
		return nil
	}
	if err != nil {
		return fmt.Errorf("bad configuration:\n%w", err)
	}
	if cfg.PodName == "" {
		cfg.PodName, _ = os.Hostname()
	}
	log, err := newLogger(cfg.LogLevel)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()

	q, err := queueproxy.New(cfg, log)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return q.Run(ctx, queueproxy.Listeners{})
}

func newLogger(level string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("LOG_LEVEL: %w", err)
	}
	c := zap.NewProductionConfig()
	c.Level = zap.NewAtomicLevelAt(lvl)
	c.Sampling = nil
	return c.Build()
}
