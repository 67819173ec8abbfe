// Command grpchello is the gRPC sample app of the local platform: a gRPC
// server (HTTP/2 cleartext) on 127.0.0.1:$PORT with the Greeter service of
// internal/grpcsample (unary Hello, server-streaming Count) and the
// standard health service, answering each call after a fixed latency. It
// starts listening only after a start-up delay, like a real app warming up.
//
//	grpchello --latency 50ms --startup-delay 300ms
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"ebb.dev/ebb/internal/grpcsample"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "grpchello:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("grpchello", flag.ContinueOnError)
	latency := fs.Duration("latency", 50*time.Millisecond, "time to answer each call (and between two messages of Count)")
	startup := fs.Duration("startup-delay", 0, "time before the server listens")
	if err := fs.Parse(args); err != nil {
		return err
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
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	g := grpc.NewServer()
	grpcsample.Register(g, &grpcsample.Server{Name: host + " (pid " + strconv.Itoa(os.Getpid()) + ")", Delay: *latency})
	hs := health.NewServer() // SERVING for "" and every service
	hs.SetServingStatus(grpcsample.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(g, hs)
	errc := make(chan error, 1)
	go func() { errc <- g.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	hs.Shutdown() // NOT_SERVING for the checks still coming
	done := make(chan struct{})
	go func() { g.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		g.Stop()
	}
	return nil
}
