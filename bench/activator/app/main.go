// Command app is the test replica of the activator's end-to-end test and
// benchmarks: a tiny fasthttp app that starts listening after
// --ready-after (a cold start), answers the queue-proxy probe
// (K-Network-Probe: queue -> 200 "queue") itself, so it can stand in for
// a queue-proxy and app pair, and answers every other request with
// "hello" after --sleep.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/pkg/stats"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8013", "listen address")
	readyAfter := flag.Duration("ready-after", 0, "wait this long before listening (a cold start)")
	sleep := flag.Duration("sleep", 0, "time each request takes")
	flag.Parse()
	if err := run(*addr, *readyAfter, *sleep); err != nil {
		fmt.Fprintln(os.Stderr, "app:", err)
		os.Exit(1)
	}
}

func run(addr string, readyAfter, sleep time.Duration) error {
	time.Sleep(readyAfter)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	// The moment the app is ready, for the cold-start benchmark.
	fmt.Printf("ready %d\n", time.Now().UnixNano())
	s := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Request.Header.Peek(stats.ProbeHeaderName)) == stats.ProbeHeaderValue {
			ctx.SetBodyString(stats.ProbeHeaderValue)
			return
		}
		if sleep > 0 {
			time.Sleep(sleep)
		}
		ctx.SetBodyString("hello")
	}}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	go func() { <-sig; s.Shutdown() }()
	return s.Serve(ln)
}
