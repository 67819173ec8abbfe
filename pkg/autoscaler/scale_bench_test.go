package autoscaler

import (
	"context"
	"flag"
	"strconv"
	"syscall"
	"testing"
	"time"

	"ebb.dev/ebb/pkg/scaling/decider"
	"ebb.dev/ebb/pkg/stats"
)

// scalePlatform is bench/autoscaler's platform in a test: every revision
// has the same three ready pods, each at 40m of cpu against a 100m
// request for the HPA class.
type scalePlatform struct {
	pods   []Pod
	states []PodState
}

func newScalePlatform() *scalePlatform {
	p := &scalePlatform{}
	for i := range 3 {
		pod := Pod{Name: "pod-" + strconv.Itoa(i), Started: time.Unix(t0-3600, 0)}
		p.pods = append(p.pods, pod)
		cpu := 0.04
		p.states = append(p.states, PodState{Pod: pod, Ready: true, ReadySince: pod.Started,
			Containers: []decider.ContainerSample{{Name: "app", CPU: &cpu, CPURequest: 0.1}}})
	}
	return p
}

func (p *scalePlatform) PodStates(context.Context, RevisionKey) ([]PodState, error) {
	return p.states, nil
}
func (p *scalePlatform) ReadyPods(context.Context, RevisionKey) ([]Pod, error) { return p.pods, nil }
func (p *scalePlatform) Scale(context.Context, RevisionKey, int32) error       { return nil }
func (p *scalePlatform) SetActivatorInPath(context.Context, RevisionKey, bool) error {
	return nil
}

// scaleScraper is bench/autoscaler's load: it varies with the second.
type scaleScraper struct{ sec *int64 }

func (s scaleScraper) Scrape(_ context.Context, p Pod) (stats.Stat, error) {
	return stats.Stat{Source: stats.SourceQueueProxy, PodName: p.Name, Period: time.Second,
		AverageConcurrency: float64(50 + *s.sec%40), RequestCount: uint64(100 + *s.sec%17)}, nil
}

var scaleByPhase = flag.Bool("scale-by-phase", false, "BenchmarkSecondsAtScale: close the revisions in the schedule's order")

var scaleRevisions = flag.Int("scale-revisions", 20_000, "BenchmarkSecondsAtScale: revisions")

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSecondsAtScale closes one second of 20,000 revisions with
// traffic per op, a quarter of them of the HPA class on cpu (the
// population of bench/autoscaler's traffic rows, on one goroutine): the
// steady state's cost per revision-second, as process CPU time
// (cpu-ns/rev-second), which other work on a shared machine moves less
// than the wall time. Seventy warm-up seconds fill the windows and the
// histories first.
//
// Under callgrind (instructions, which the machine's other work does not
// move at all), bench/autoscaler/count.sh runs it at two counts of
// measured seconds and a few hundred revisions (-scale-revisions) and
// reports the difference per revision-second (make bench-autoscaler-count).
func BenchmarkSecondsAtScale(b *testing.B) {
	n := *scaleRevisions
	sec := int64(t0)
	a := New(Options{Platform: newScalePlatform(), Scraper: scaleScraper{&sec}, Clock: &fakeClock{now: time.Unix(t0, 0)}})
	kpa := map[string]string{"autoscaling.knative.dev/target": "10"}
	hpa := map[string]string{"autoscaling.knative.dev/class": "hpa.autoscaling.knative.dev",
		"autoscaling.knative.dev/metric": "cpu", "autoscaling.knative.dev/target": "50"}
	revs := make([]*revision, 0, n)
	for i := range n {
		key := RevisionKey{Namespace: "bench", Name: "rev-" + strconv.Itoa(i)}
		ann := kpa
		if i%4 == 0 {
			ann = hpa
		}
		if err := a.Upsert(key, ann); err != nil {
			b.Fatal(err)
		}
		revs = append(revs, a.revisions[key])
	}
	if *scaleByPhase {
		var byPhase [phases][]*revision
		for _, r := range revs {
			byPhase[r.phase] = append(byPhase[r.phase], r)
		}
		revs = revs[:0]
		for _, l := range byPhase {
			revs = append(revs, l...)
		}
	}
	ctx, cancel := context.WithCancel(context.Background()) // a worker's: scrapes share deadlines under it
	defer cancel()
	closeAll := func() {
		for _, r := range revs {
			r.second(ctx, sec)
		}
		sec++
	}
	for range 70 {
		closeAll()
	}
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		closeAll()
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N*n), "cpu-ns/rev-second")
}
