package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/autoscaler/scrape"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/revisionstatus"
	"ebb.dev/ebb/pkg/scaling/decider"
)

// population is a kind of row.
type population int

const (
	withTraffic population = iota
	atZero
	overHTTP
)

func (p population) String() string {
	return [...]string{"traffic", "at zero", "HTTP"}[p]
}

type result struct {
	revisions                    int
	cores, cpuPerTick, kibPerRev float64
	decisions, hpa, hpaFailing   int64
	p50, p99, max                float64
	scrapes                      int64
	cpuPerScrape                 float64 // µs per scraped pod-second
	statusWritesPerSec           float64 // RevisionAutoscaler API writes (-status-writes)
	statusWaiting                int64
}

// zeroConfig makes a new revision start at zero: Knative's initial scale
// of 1 would have every fresh decider ask for a replica until the
// activation timeout, as for a newly created revision.
var zeroConfig = map[string]string{"initial-scale": "0", "allow-zero-initial-scale": "true"}

// latencies is a histogram of 10µs buckets up to 10s.
type latencies struct{ buckets [1_000_001]atomic.Int64 }

func (l *latencies) add(d time.Duration) {
	i := min(max(int(d/(10*time.Microsecond)), 0), len(l.buckets)-1)
	l.buckets[i].Add(1)
}

func (l *latencies) quantiles(qs ...float64) []float64 {
	var total int64
	for i := range l.buckets {
		total += l.buckets[i].Load()
	}
	out := make([]float64, len(qs))
	for qi, q := range qs {
		want := int64(math.Ceil(q * float64(total)))
		var seen int64
		for i := range l.buckets {
			if seen += l.buckets[i].Load(); seen >= want && want > 0 {
				out[qi] = float64(i) * 0.01
				break
			}
		}
	}
	return out
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func memInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if os.Getenv("BENCH_DEBUG") != "" {
		fmt.Fprintf(os.Stderr, "heap in use %d KiB, stacks %d KiB, goroutines %d\n", ms.HeapInuse>>10, ms.StackInuse>>10, runtime.NumGoroutine())
	}
	return ms.HeapInuse + ms.StackInuse
}

// counters are what OnDecision counts while measuring.
type counters struct {
	lat                                   latencies
	measuring, decisions, hpa, hpaFailing atomic.Int64
	all                                   atomic.Int64     // measuring or not
	worst                                 [64]atomic.Int64 // the worst latency by wall second mod 64 (BENCH_DEBUG)
}

func (c *counters) onDecision(_ autoscaler.RevisionKey, v *decider.Decision, due time.Time) {
	c.all.Add(1)
	if c.measuring.Load() == 0 {
		return
	}
	c.decisions.Add(1)
	now := time.Now() // one clock read: the bench's own cost is counted with the autoscaler's
	late := now.Sub(due)
	c.lat.add(late)
	if sec := now.Unix() % int64(len(c.worst)); late > time.Duration(c.worst[sec].Load()) {
		c.worst[sec].Store(int64(late)) // racy max: a debug timeline (BENCH_DEBUG)
	}
	if v.Class == config.ClassHPA {
		// The bench's own check, on one decision in 64 (it allocates).
		if c.hpa.Add(1)%64 != 0 {
			return
		}
		for _, cond := range decider.HPAConditions(v.Reasons()) {
			if cond.Type == decider.ConditionScalingActive && cond.Status == "False" {
				c.hpaFailing.Add(64) // the bench's pods are misread: its numbers would not be the HPA class's
			}
		}
	}
}

func measure(kind population, n int) result {
	stopSecond := make(chan struct{})
	defer close(stopSecond)
	go keepSecond(stopSecond)
	var c counters
	o := autoscaler.Options{OnDecision: c.onDecision}
	var stop func()
	switch kind {
	case withTraffic:
		o.Platform, o.Scraper = newFakePlatform(*podCount), fakeScraper{}
	case atZero:
		o.Platform, o.Scraper = &fakePlatform{}, fakeScraper{}
	case overHTTP:
		p, s, err := startFakePods(n)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		o.Platform, stop = p, s
		client := scrape.New()
		defer client.Close()
		o.Scraper = &countingScraper{Scraper: client}
		o.Metrics = prometheus.NewRegistry() // as cmd/autoscaler runs it
		n = p.revisions
	}
	if stop != nil {
		defer stop()
	}
	if *withMetrics {
		o.Metrics = prometheus.NewRegistry()
	}
	before := memInUse()
	as := upsert(o, kind, n)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { as.Run(ctx); close(done) }()
	var sw *revisionstatus.Writer
	if *statusWrites > 0 {
		sw = newStatusWriter(as, *statusWrites)
		go func() { sw.Run(ctx) }()
	}
	time.Sleep(*warmup) // windows and histories fill, stacks grow
	if kind == atZero {
		settle(&c)
	}
	mem := memInUse() - before
	writeHeapProfile(*memProfile)
	scrapes0 := scrapeCount(o.Scraper)
	c.measuring.Store(1)
	stopCPU, stopTrace := startCPUProfile(), startTrace()
	cpu0, wall0 := cpuTime(), time.Now()
	writes0 := statusWriteCount(sw)
	time.Sleep(*duration)
	cpu, wall := cpuTime()-cpu0, time.Since(wall0)
	writes := statusWriteCount(sw) - writes0
	stopCPU()
	stopTrace()
	if os.Getenv("BENCH_DEBUG") != "" {
		for t := wall0.Unix(); t <= time.Now().Unix(); t++ {
			fmt.Fprintf(os.Stderr, "%s worst %v\n", time.Unix(t, 0).Format("15:04:05"), time.Duration(c.worst[t%64].Load()).Round(time.Millisecond))
		}
	}
	if *memProfile != "" { // allocations while measuring: pprof -base the first
		writeHeapProfile(*memProfile + ".end")
	}
	c.measuring.Store(0)
	scrapes := scrapeCount(o.Scraper) - scrapes0
	cancel()
	<-done
	ticks := wall.Seconds() / 2 // the default tick interval
	q := c.lat.quantiles(0.5, 0.99, 1)
	r := result{
		revisions:  n,
		cores:      cpu.Seconds() / wall.Seconds(),
		cpuPerTick: float64(cpu.Microseconds()) / (ticks * float64(n)),
		kibPerRev:  float64(mem) / 1024 / float64(n),
		decisions:  c.decisions.Load(),
		hpa:        c.hpa.Load(), hpaFailing: c.hpaFailing.Load(),
		p50: q[0], p99: q[1], max: q[2],
		scrapes: scrapes,
	}
	if sw != nil {
		r.statusWritesPerSec = float64(writes) / wall.Seconds()
		r.statusWaiting = sw.Waiting()
	}
	if scrapes > 0 {
		r.cpuPerScrape = float64(cpu.Microseconds()) / float64(scrapes)
	}
	return r
}

// upsert makes the autoscaler and its n revisions.
func upsert(o autoscaler.Options, kind population, n int) *autoscaler.Autoscaler {
	as := autoscaler.New(o)
	if kind == atZero {
		if err := as.SetConfig(zeroConfig); err != nil {
			panic(err)
		}
	}
	hpaEvery := 0 // every hpaEvery-th revision is of the HPA class
	if *hpaShare > 0 && kind == withTraffic {
		hpaEvery = int(math.Round(1 / *hpaShare))
	}
	kpa := map[string]string{"autoscaling.knative.dev/target": "10"}
	hpa := map[string]string{"autoscaling.knative.dev/class": "hpa.autoscaling.knative.dev",
		"autoscaling.knative.dev/metric": "cpu", "autoscaling.knative.dev/target": "50"}
	for i := range n {
		key := autoscaler.RevisionKey{Namespace: "bench", Name: "rev-" + strconv.Itoa(i)}
		anns := kpa
		if hpaEvery > 0 && i%hpaEvery == 0 {
			anns = hpa
		}
		if err := as.Upsert(key, anns); err != nil {
			panic(err)
		}
	}
	return as
}

// settle waits until the revisions at zero rest: 5s without a decision
// (they decide twice each, at once, before they rest), 3 minutes at most.
func settle(c *counters) {
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); {
		n := c.all.Load()
		time.Sleep(5 * time.Second)
		if c.all.Load() == n {
			return
		}
	}
	fmt.Fprintln(os.Stderr, "the revisions at zero still decide after 3 minutes of warm-up")
}

func writeHeapProfile(name string) {
	if name == "" {
		return
	}
	runtime.GC() // the profile is as of the last collection
	if f, err := os.Create(name); err == nil {
		pprof.WriteHeapProfile(f)
		f.Close()
	}
}

func startCPUProfile() func() {
	if *cpuProfile == "" {
		return func() {}
	}
	f, err := os.Create(*cpuProfile)
	if err != nil {
		return func() {}
	}
	pprof.StartCPUProfile(f)
	return func() { pprof.StopCPUProfile(); f.Close() }
}

// startTrace starts the execution trace of -trace, if asked.
func startTrace() func() {
	if *execTrace == "" {
		return func() {}
	}
	f, err := os.Create(*execTrace)
	if err != nil {
		return func() {}
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return func() {}
	}
	return func() { trace.Stop(); f.Close() }
}
