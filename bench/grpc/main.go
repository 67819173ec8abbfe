// Command grpc is make bench-grpc: unary gRPC calls (the sample Greeter,
// deploy/local/grpchello, answering at once) straight to the app, through
// the queue-proxy, and through a bare h2c reverse proxy built from the same
// HTTP/2 library (bench/grpc/baseline), in alternating rounds in one run;
// then the ratios. Every process it starts is killed when it ends, and
// every round is bounded by DURATION.
//
//	go run ./bench/grpc          (or: make bench-grpc; knobs ROUNDS, DURATION, CONNS, BASE_PORT)
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"ebb.dev/ebb/internal/grpcsample"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-grpc:", err)
		os.Exit(1)
	}
}

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func run() error {
	rounds, err := strconv.Atoi(env("ROUNDS", "2"))
	if err != nil || rounds < 1 {
		return fmt.Errorf("ROUNDS=%q: must be an integer above 0", os.Getenv("ROUNDS"))
	}
	dur, err := time.ParseDuration(env("DURATION", "5s"))
	if err != nil || dur <= 0 || dur > 20*time.Second {
		return fmt.Errorf("DURATION=%q: must be a duration within (0, 20s]", os.Getenv("DURATION"))
	}
	conns, err := strconv.Atoi(env("CONNS", "50"))
	if err != nil || conns < 1 {
		return fmt.Errorf("CONNS=%q: must be an integer above 0", os.Getenv("CONNS"))
	}
	base, err := strconv.Atoi(env("BASE_PORT", "18200"))
	if err != nil {
		return fmt.Errorf("BASE_PORT=%q: must be a port", os.Getenv("BASE_PORT"))
	}
	work, err := os.MkdirTemp("", "ebb-bench-grpc-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	fmt.Println("building into", work)
	if out, err := exec.Command("go", "build", "-o", work+"/", "./cmd/queueproxy", "./deploy/local/grpchello",
		"./bench/grpc/baseline").CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	app, bl, qp, qpa := base, base+1, base+2, base+3
	var procs procs
	defer procs.stop()
	port := strconv.Itoa
	if err := procs.start(work, "grpchello", []string{"PORT=" + port(app)}, "--latency=0"); err != nil {
		return err
	}
	if err := procs.start(work, "baseline", nil, "-listen", addr(bl), "-upstream", addr(app)); err != nil {
		return err
	}
	if err := procs.start(work, "queueproxy", []string{"QUEUE_SERVING_PORT=" + port(qp), "QUEUE_ADMIN_PORT=" + port(qpa),
		"USER_PORT=" + port(app), "LOG_LEVEL=warn", "DRAIN_PERIOD_SECONDS=0", "QUEUE_BIND_ADDRESS=127.0.0.1"}); err != nil {
		return err
	}
	targets := []target{{"app direct", addr(app)}, {"bare h2c proxy", addr(bl)}, {"queue-proxy", addr(qp)}}
	for _, t := range targets {
		if err := waitCall(t.addr); err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
	}
	results := map[string][]measure{}
	for r := range rounds {
		for _, t := range targets {
			for _, c := range []int{conns, 1} {
				m, err := load(t.addr, c, dur)
				if err != nil {
					return fmt.Errorf("round %d, %s, %d clients: %w", r+1, t.name, c, err)
				}
				key := t.name + "/" + strconv.Itoa(c)
				results[key] = append(results[key], m)
				fmt.Printf("round %d  %-15s c=%-3d %8.0f calls/s  p50 %6.0f us  p99 %6.0f us  errors %d\n",
					r+1, t.name, c, m.rate, us(m.p50), us(m.p99), m.errors)
			}
		}
	}
	report(results, conns)
	return nil
}

func addr(port int) string       { return "127.0.0.1:" + strconv.Itoa(port) }
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

type target struct{ name, addr string }

type measure struct {
	rate     float64
	p50, p99 time.Duration
	errors   int64
}

// report prints the ratios of the medians over the rounds (the mean of
// the middle two for an even number of rounds).
func report(res map[string][]measure, conns int) {
	med := func(key string, f func(measure) float64) float64 {
		var v []float64
		for _, m := range res[key] {
			v = append(v, f(m))
		}
		slices.Sort(v)
		if n := len(v); n%2 == 0 {
			return (v[n/2-1] + v[n/2]) / 2
		}
		return v[len(v)/2]
	}
	rate := func(m measure) float64 { return m.rate }
	p50 := func(m measure) float64 { return us(m.p50) }
	c := "/" + strconv.Itoa(conns)
	qp, bl := med("queue-proxy"+c, rate), med("bare h2c proxy"+c, rate)
	fmt.Printf("\nthroughput at %d clients: queue-proxy %.0f, bare h2c proxy %.0f calls/s: ratio %.2f (target >= 0.8)\n", conns, qp, bl, qp/bl)
	d := med("app direct/1", p50)
	fmt.Printf("added p50 at 1 client over the app direct (%.0f us): queue-proxy %+.0f us, bare h2c proxy %+.0f us; "+
		"queue-proxy minus bare %+.0f us (target <= 100)\n", d, med("queue-proxy/1", p50)-d, med("bare h2c proxy/1", p50)-d,
		med("queue-proxy/1", p50)-med("bare h2c proxy/1", p50))
}

// load has c callers, on one HTTP/2 connection (as a gRPC client does),
// call Hello back to back for d.
func load(address string, c int, d time.Duration) (measure, error) {
	cc, err := grpc.NewClient(address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return measure{}, err
	}
	defer cc.Close()
	var errs atomic.Int64
	lats := make([][]time.Duration, c)
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for i := range c {
		wg.Go(func() {
			for time.Now().Before(end) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				t0 := time.Now()
				_, err := grpcsample.Hello(ctx, cc, "bench")
				lats[i] = append(lats[i], time.Since(t0))
				cancel()
				if err != nil {
					errs.Add(1)
				}
			}
		})
	}
	wg.Wait()
	all := slices.Concat(lats...)
	slices.Sort(all)
	if len(all) == 0 {
		return measure{}, fmt.Errorf("no call completed")
	}
	return measure{rate: float64(len(all)) / time.Since(start).Seconds(), p50: all[len(all)/2],
		p99: all[len(all)*99/100], errors: errs.Load()}, nil
}

// waitCall waits up to 10s for a first successful call.
func waitCall(address string) error {
	cc, err := grpc.NewClient(address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer cc.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := grpcsample.Hello(ctx, cc, "ready?")
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no successful call within 10s: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// procs are the processes started; stop kills them (by PID) and waits.
type procs struct{ cmds []*exec.Cmd }

func (p *procs) start(dir, name string, env []string, args ...string) error {
	cmd := exec.Command(filepath.Join(dir, name), args...)
	cmd.Env = append(os.Environ(), env...)
	log, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return err
	}
	p.cmds = append(p.cmds, cmd)
	return nil
}

func (p *procs) stop() {
	for _, c := range p.cmds {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
}
