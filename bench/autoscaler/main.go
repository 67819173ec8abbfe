// Command autoscaler-bench drives one in-process autoscaler with many
// simulated revisions: fake platform and stats sources, the real per-
// revision goroutines, collector, decider and history. It prints CPU per
// revision-tick, memory per revision and the tick-to-decision latency.
//
//	go run ./bench/autoscaler -revisions 1000,10000 -duration 20s -hpa-share 0.25
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/decider"
	"ebb.dev/ebb/pkg/stats"
)

var (
	memProfile = flag.String("memprofile", "", "write a heap profile after the warm-up")
	warmup     = flag.Duration("warmup", 25*time.Second, "time before measuring: long enough to fill the decision history (10 decisions)")
	hpaShare   = flag.Float64("hpa-share", 0, "share of the revisions of the HPA class on cpu (50% of a 100m request), read through PodStates")
)

func main() {
	counts := flag.String("revisions", "1000,10000", "revision counts to run, comma-separated")
	duration := flag.Duration("duration", 20*time.Second, "measured time per count (after the warm-up)")
	pods := flag.Int("pods", 3, "ready pods per revision")
	flag.Parse()
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "revisions\tcores used\tCPU µs/revision/tick\tmemory KiB/revision\tdecisions\tof the HPA class (failing)\tlatency p50 ms\tp99 ms\tmax ms\t")
	for _, c := range strings.Split(*counts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "-revisions %q: want whole numbers\n", c)
			os.Exit(2)
		}
		r := measure(n, *pods, *duration)
		fmt.Fprintf(tw, "%d\t%.3f\t%.2f\t%.2f\t%d\t%d (%d)\t%.2f\t%.2f\t%.2f\t\n", n, r.cores, r.cpuPerTick, r.kibPerRev, r.decisions,
			r.hpa, r.hpaFailing, r.p50, r.p99, r.max)
		tw.Flush()
	}
}

type result struct {
	cores, cpuPerTick, kibPerRev float64
	decisions, hpa, hpaFailing   int64
	p50, p99, max                float64
}

// fakePlatform answers every revision with the same ready pods, and the
// HPA class with their states: each at 40m of cpu against a 100m request.
type fakePlatform struct {
	pods   []autoscaler.Pod
	states []autoscaler.PodState
}

func (p *fakePlatform) PodStates(context.Context, autoscaler.RevisionKey) ([]autoscaler.PodState, error) {
	return p.states, nil
}

func (p *fakePlatform) ReadyPods(context.Context, autoscaler.RevisionKey) ([]autoscaler.Pod, error) {
	return p.pods, nil
}
func (p *fakePlatform) Scale(context.Context, autoscaler.RevisionKey, int32) error { return nil }
func (p *fakePlatform) SetActivatorInPath(context.Context, autoscaler.RevisionKey, bool) error {
	return nil
}

// fakeScraper returns a load that varies with the second.
type fakeScraper struct{}

func (fakeScraper) Scrape(_ context.Context, p autoscaler.Pod) (stats.Stat, error) {
	sec := time.Now().Unix()
	return stats.Stat{Source: stats.SourceQueueProxy, PodName: p.Name, Period: time.Second,
		AverageConcurrency: float64(50 + sec%40), RequestCount: uint64(100 + sec%17)}, nil
}

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

func measure(n, podCount int, d time.Duration) result {
	plat := &fakePlatform{}
	for i := range podCount {
		pod := autoscaler.Pod{Name: "pod-" + strconv.Itoa(i), Started: time.Now().Add(-time.Hour)}
		plat.pods = append(plat.pods, pod)
		cpu := 0.04
		plat.states = append(plat.states, autoscaler.PodState{Pod: pod, Ready: true, ReadySince: pod.Started,
			Containers: []decider.ContainerSample{{Name: "app", CPU: &cpu, CPURequest: 0.1}}})
	}
	hpaEvery := 0 // every hpaEvery-th revision is of the HPA class
	if *hpaShare > 0 {
		hpaEvery = int(math.Round(1 / *hpaShare))
	}
	var lat latencies
	var decisions, measuring, hpaDecisions, hpaFailing atomic.Int64
	as := autoscaler.New(autoscaler.Options{Platform: plat, Scraper: fakeScraper{},
		OnDecision: func(_ autoscaler.RevisionKey, v *decider.Decision) {
			if measuring.Load() == 0 {
				return
			}
			decisions.Add(1)
			lat.add(time.Since(v.At.Add(time.Second)))
			if v.Class == config.ClassHPA {
				hpaDecisions.Add(1)
				for _, c := range decider.HPAConditions(v.Reasons()) {
					if c.Type == decider.ConditionScalingActive && c.Status == "False" {
						hpaFailing.Add(1) // the bench's pods are misread: its numbers would not be the HPA class's
					}
				}
			}
		}})
	before := memInUse()
	for i := range n {
		key := autoscaler.RevisionKey{Namespace: "bench", Name: "rev-" + strconv.Itoa(i)}
		anns := map[string]string{"autoscaling.knative.dev/target": "10"}
		if hpaEvery > 0 && i%hpaEvery == 0 {
			anns = map[string]string{"autoscaling.knative.dev/class": "hpa.autoscaling.knative.dev",
				"autoscaling.knative.dev/metric": "cpu", "autoscaling.knative.dev/target": "50"}
		}
		if err := as.Upsert(key, anns); err != nil {
			panic(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { as.Run(ctx); close(done) }()
	time.Sleep(*warmup) // windows and histories fill, stacks grow
	mem := memInUse() - before
	if *memProfile != "" {
		f, err := os.Create(*memProfile)
		if err == nil {
			pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	measuring.Store(1)
	cpu0, wall0 := cpuTime(), time.Now()
	time.Sleep(d)
	cpu, wall := cpuTime()-cpu0, time.Since(wall0)
	measuring.Store(0)
	cancel()
	<-done
	ticks := wall.Seconds() / 2 // the default tick interval
	q := lat.quantiles(0.5, 0.99, 1)
	return result{
		cores:      cpu.Seconds() / wall.Seconds(),
		cpuPerTick: float64(cpu.Microseconds()) / (ticks * float64(n)),
		kibPerRev:  float64(mem) / 1024 / float64(n),
		decisions:  decisions.Load(),
		hpa:        hpaDecisions.Load(), hpaFailing: hpaFailing.Load(),
		p50: q[0], p99: q[1], max: q[2],
	}
}
