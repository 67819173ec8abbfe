// Command grpcload is a small gRPC load client for the sample app
// (deploy/local/grpchello) through Ebb's front door: C clients call
// Greeter.Hello (or Count) back to back for a duration, and it prints the
// calls by status code and the latency percentiles. It stands in for ghz:
// the only ghz release the Go module proxy lists, v0.93.0, does not build
// against current gRPC (it calls grpc.WithBalancerName, since removed), so
// it cannot be a tool of this module; this is the few lines of it Ebb
// needs.
//
//	grpcload -addr 127.0.0.1:8080 -authority grpchello.default.localhost -c 20 -z 20s
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"ebb.dev/ebb/internal/grpcsample"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "grpcload:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("grpcload", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "host:port of the front door (the activator) or a queue-proxy")
	authority := fs.String("authority", "grpchello.default.localhost", "the :authority (Host) that names the revision")
	clients := fs.Int("c", 10, "concurrent callers (streams in flight), on one HTTP/2 connection")
	duration := fs.Duration("z", 10*time.Second, "how long to call")
	timeout := fs.Duration("t", 20*time.Second, "deadline of each call (grpc-timeout)")
	count := fs.Uint("count", 0, "call Count(N) (server-streaming) instead of Hello when > 0")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *clients < 1 || *duration <= 0 || *timeout <= 0 {
		return fmt.Errorf("-c %d, -z %v, -t %v: each must be above 0", *clients, *duration, *timeout)
	}
	cc, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithAuthority(*authority))
	if err != nil {
		return err
	}
	defer cc.Close()
	r := load(cc, *clients, *duration, *timeout, uint32(*count))
	fmt.Print(r)
	if r.failed() {
		return fmt.Errorf("%d of %d calls failed", r.total-r.codes["OK"], r.total)
	}
	return nil
}

type result struct {
	mu    sync.Mutex
	total int
	codes map[string]int
	lat   []time.Duration
	took  time.Duration
}

func (r *result) failed() bool { return r.total == 0 || r.codes["OK"] != r.total }

func (r *result) String() string {
	slices.Sort(r.lat)
	pct := func(p float64) time.Duration {
		if len(r.lat) == 0 {
			return 0
		}
		return r.lat[min(len(r.lat)-1, int(p*float64(len(r.lat))))]
	}
	return fmt.Sprintf("calls %d in %v (%.1f/s)\ncodes %v\nlatency p50 %v p90 %v p99 %v max %v\n",
		r.total, r.took.Round(time.Millisecond), float64(r.total)/r.took.Seconds(), r.codes,
		pct(0.5), pct(0.9), pct(0.99), pct(1))
}

func load(cc *grpc.ClientConn, clients int, d, timeout time.Duration, count uint32) *result {
	r := &result{codes: map[string]int{}}
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			for time.Now().Before(end) {
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				t0 := time.Now()
				var err error
				if count > 0 {
					_, err = grpcsample.Count(ctx, cc, count)
				} else {
					_, err = grpcsample.Hello(ctx, cc, fmt.Sprint("client-", i))
				}
				cancel()
				took := time.Since(t0)
				r.mu.Lock()
				r.total++
				r.codes[status.Code(err).String()]++
				r.lat = append(r.lat, took)
				r.mu.Unlock()
			}
		})
	}
	wg.Wait()
	r.took = time.Since(start)
	return r
}
