// Command whatif is `make bench-whatif`: on a trace in the Azure Functions
// 2019 format, it runs `autoscaler whatif`'s simulation for Knative's
// policy, a fixed 10-minute keep-alive and the learned policy (its default
// and a setting aimed at the 10-minute keep-alive's cold starts) in one
// run, and prints the ratios of cold starts and idle replica-seconds, their
// spread over the trace's owners, and the time the run took.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/whatif"
)

// setting is one configuration of the run.
type setting struct {
	name string
	ann  map[string]string
}

var settings = []setting{
	{name: "knative", ann: nil},
	{name: "keep-alive 10m", ann: map[string]string{config.AnnotationScaleToZeroPodRetention: "10m"}},
	{name: "learned", ann: map[string]string{config.AnnotationScaleToZeroPolicy: config.ScaleToZeroLearned}},
	// A dearer cold start, a 5-minute retention while the policy has too
	// little history (Knative's rules, which it falls back to), and a
	// pre-warm lead that covers the 1s start and a 2s tick.
	{name: "learned 14m+5m/3s", ann: map[string]string{config.AnnotationScaleToZeroPolicy: config.ScaleToZeroLearned,
		config.AnnotationColdStartCost: "14m", config.AnnotationScaleToZeroPodRetention: "5m", config.AnnotationPrewarmLead: "3s"}},
}

func main() {
	dir := flag.String("trace", "", "the trace directory (invocations.csv, durations.csv)")
	cold := flag.Duration("cold-start", time.Second, "replica cold start")
	flag.Parse()
	if err := run(*dir, *cold, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench-whatif:", err)
		os.Exit(1)
	}
}

func run(dir string, cold time.Duration, out io.Writer) error {
	fns, err := load(dir)
	if err != nil {
		return err
	}
	began := time.Now()
	results := make([][]whatif.Result, len(settings))
	for i, s := range settings {
		rev, err := config.NewRevision(nil, s.ann, nil)
		if err != nil {
			return fmt.Errorf("setting %s: %w", s.name, err)
		}
		results[i] = simulate(fns, whatif.Options{Revision: rev, ColdStart: cold})
	}
	took := time.Since(began)
	fmt.Fprintf(out, "bench-whatif: %d functions, %d owners, a day each, --cold-start %v, %d settings in %.1fs (GOMAXPROCS %d)\n\n",
		len(fns), len(owners(fns)), cold, len(settings), took.Seconds(), runtime.GOMAXPROCS(0))
	sums := make([]whatif.Result, len(settings))
	fmt.Fprintf(out, "%-16s %12s %10s %14s %16s\n", "setting", "cold starts", "share", "idle replica-s", "replica-s")
	for i, s := range settings {
		sums[i] = whatif.NewSummary(s.name)
		for j := range results[i] {
			sums[i].Merge(&results[i][j])
		}
		fmt.Fprintf(out, "%-16s %12d %10.5f %14.0f %16.0f\n", s.name, sums[i].ColdStarts, sums[i].ColdStartShare(),
			sums[i].IdleReplicaSeconds(), sums[i].ReplicaSeconds())
	}
	fmt.Fprintln(out)
	target(out, "learned vs knative", sums[2], sums[0], fns, results[2], results[0], 0.4, 1.2, false)
	target(out, "learned 14m+5m/3s vs keep-alive 10m", sums[3], sums[1], fns, results[3], results[1], 1, 0.6, true)
	return nil
}

// target prints the two ratios of a against b, whether they meet the
// targets, and their spread over owners.
func target(out io.Writer, title string, a, b whatif.Result, fns []whatif.Function, ra, rb []whatif.Result, maxCold, maxIdle float64, coldAbsolute bool) {
	cold := float64(a.ColdStarts) / float64(b.ColdStarts)
	idle := a.IdleReplicaSeconds() / b.IdleReplicaSeconds()
	coldOK := cold <= maxCold
	want := fmt.Sprintf("at most %.2fx", maxCold)
	if coldAbsolute {
		want = "at most 1x (as few)"
	}
	fmt.Fprintf(out, "%s:\n  cold starts %.3fx (%d / %d; target %s: %s)\n  idle replica-seconds %.3fx (target at most %.2fx: %s)\n",
		title, cold, a.ColdStarts, b.ColdStarts, want, verdict(coldOK), idle, maxIdle, verdict(idle <= maxIdle))
	c, i := perOwner(fns, ra, rb)
	fmt.Fprintf(out, "  over %d owners with cold starts: cold-start ratio p10 %.2f, p50 %.2f, p90 %.2f\n", len(c), q(c, 10), q(c, 50), q(c, 90))
	fmt.Fprintf(out, "  over %d owners with idle time: idle ratio p10 %.2f, p50 %.2f, p90 %.2f\n\n", len(i), q(i, 10), q(i, 50), q(i, 90))
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// perOwner returns each owner's ratios of a against b: cold starts (owners
// b gives cold starts) and idle replica-seconds (owners b gives idle time).
func perOwner(fns []whatif.Function, ra, rb []whatif.Result) (cold, idle []float64) {
	type sums struct{ ca, cb, ia, ib float64 }
	by := map[string]*sums{}
	for j := range fns {
		s := by[fns[j].Owner]
		if s == nil {
			s = &sums{}
			by[fns[j].Owner] = s
		}
		s.ca += float64(ra[j].ColdStarts)
		s.cb += float64(rb[j].ColdStarts)
		s.ia += ra[j].IdleReplicaSeconds()
		s.ib += rb[j].IdleReplicaSeconds()
	}
	for _, s := range by {
		if s.cb > 0 {
			cold = append(cold, s.ca/s.cb)
		}
		if s.ib > 0 {
			idle = append(idle, s.ia/s.ib)
		}
	}
	sort.Float64s(cold)
	sort.Float64s(idle)
	return cold, idle
}

// q is the nearest-rank percentile of sorted xs.
func q(xs []float64, pct int) float64 {
	if len(xs) == 0 {
		return 0
	}
	return xs[max((pct*len(xs)+99)/100, 1)-1]
}

func owners(fns []whatif.Function) []string {
	var o []string
	for _, f := range fns {
		o = append(o, f.Owner)
	}
	slices.Sort(o)
	return slices.Compact(o)
}

func simulate(fns []whatif.Function, o whatif.Options) []whatif.Result {
	res := make([]whatif.Result, len(fns))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				res[j] = whatif.Run(&fns[j], o)
			}
		}()
	}
	for j := range fns {
		jobs <- j
	}
	close(jobs)
	wg.Wait()
	return res
}

func load(dir string) ([]whatif.Function, error) {
	open := func(name string) (*os.File, error) {
		f, err := os.Open(dir + "/" + name)
		if err != nil {
			return nil, fmt.Errorf("reading the trace (set TRACE to its directory): %w", err)
		}
		return f, nil
	}
	inv, err := open("invocations.csv")
	if err != nil {
		return nil, err
	}
	defer inv.Close()
	fns, err := whatif.ParseInvocations(bufio.NewReaderSize(inv, 1<<16))
	if err != nil {
		return nil, err
	}
	dur, err := open("durations.csv")
	if err != nil {
		return nil, err
	}
	defer dur.Close()
	d, err := whatif.ParseDurations(bufio.NewReader(dur))
	if err != nil {
		return nil, err
	}
	return fns, whatif.JoinDurations(fns, d)
}
