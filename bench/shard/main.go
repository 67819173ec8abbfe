// Command shard-bench measures what sharding the autoscaler costs: the
// same revisions decided by one replica and by a fleet of replicas sharing
// them through real bucket ownership (leader.Buckets on the Leases of a
// fake clientset; each replica an autoscaler of its own), both at once in
// this process, so that the machine's load weighs on both alike. Every
// goroutine carries a pprof label naming its setup and replica: a CPU
// profile of each measured window gives each replica's CPU, and the
// fleet's against the single replica's, per decision. The per-revision
// cost itself is the autoscaler's (bench/autoscaler).
//
//	go run ./bench/shard -revisions 300000 -replicas 3
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/autoscaler/bucket"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster/clustertest"
	"ebb.dev/ebb/pkg/platform/kubernetes/leader"
	"ebb.dev/ebb/pkg/scaling/decider"
	"ebb.dev/ebb/pkg/stats"
)

var (
	revisions = flag.Int("revisions", 300000, "revisions, decided by each setup")
	replicas  = flag.Int("replicas", 3, "replicas of the fleet")
	buckets   = flag.Int("buckets", bucket.DefaultCount, "buckets (--buckets)")
	warmup    = flag.Duration("warmup", 25*time.Second, "time before measuring: the revisions' windows and histories fill")
	window    = flag.Duration("duration", 20*time.Second, "one measured window (a CPU profile at 100 Hz: a few thousand samples)")
	rounds    = flag.Int("rounds", 5, "measured windows (the ratio of each, and their median)")
)

func main() {
	flag.Parse()
	if err := bucket.CheckCount(*buckets); err != nil || *replicas < 1 || *revisions < 1 || *rounds < 1 {
		fmt.Fprintln(os.Stderr, "shard-bench: -buckets within [1, 100]; -replicas, -revisions and -rounds positive")
		os.Exit(2)
	}
	keys := revisionKeys(*revisions, *buckets)
	ctx, cancel := context.WithCancel(context.Background())
	one, fleet := start(ctx, "one", keys, 1), start(ctx, "fleet", keys, *replicas)
	one.settle()
	fleet.settle()
	time.Sleep(*warmup)

	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "window\tone replica: cores\tdecisions/s\tµs CPU/decision\tfleet: cores\tdecisions/s\tµs CPU/decision\tfleet/one\t")
	var ratios []float64
	var last map[string]float64
	var sumOne, sumFleet float64 // CPU per decision summed over the windows
	for i := range *rounds {
		one.reset()
		fleet.reset()
		cpu := profile(*window)
		last = cpu
		o, f := one.cpu(cpu)/one.decisions(), fleet.cpu(cpu)/fleet.decisions()
		sumOne, sumFleet = sumOne+o, sumFleet+f
		ratios = append(ratios, f/o)
		fmt.Fprintf(tw, "%d\t%.4f\t%.0f\t%.2f\t%.4f\t%.0f\t%.2f\t%.3f\t\n", i+1, one.cpu(cpu)/window.Seconds(), one.decisions()/window.Seconds(), o*1e6,
			fleet.cpu(cpu)/window.Seconds(), fleet.decisions()/window.Seconds(), f*1e6, f/o)
	}
	tw.Flush()
	slices.Sort(ratios)
	fmt.Printf("\nthe fleet of %d uses %.2fx the CPU of one replica per decision over the %d windows "+
		"(each window: median %.2fx, %.2f to %.2f), %d revisions, %d buckets\n\n",
		*replicas, sumFleet/sumOne, len(ratios), ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1], *revisions, *buckets)
	fmt.Fprintln(tw, "last window\treplica\tbuckets\trevisions\tshare of revisions\tcores\tshare of the setup's CPU\tdecisions/s\t")
	for _, s := range []*setup{one, fleet} {
		total := s.cpu(last)
		for _, r := range s.reps {
			c := last[r.label]
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.0f\t\n", s.name, r.label, r.buckets.Load(), r.held.Load(),
				float64(r.held.Load())/float64(*revisions), c/window.Seconds(), c/total, float64(r.decided.Load())/window.Seconds())
		}
	}
	tw.Flush()
	cancel() // every replica hands its buckets off and stops
	one.wg.Wait()
	fleet.wg.Wait()
}

// revisionKeys are n revisions, by bucket.
func revisionKeys(n, count int) [][]autoscaler.RevisionKey {
	out := make([][]autoscaler.RevisionKey, count)
	for i := range n {
		k := autoscaler.RevisionKey{Namespace: "bench-" + strconv.Itoa(i%50), Name: "rev-" + strconv.Itoa(i)}
		b := bucket.Of(k.String(), count)
		out[b] = append(out[b], k)
	}
	return out
}

// setup is replicas sharing the revisions on a fake cluster of their own.
type setup struct {
	name  string
	total int
	reps  []*replica
	wg    sync.WaitGroup
}

// replica is one autoscaler and its hold on the buckets.
type replica struct {
	label   string // its pprof label: SETUP/replica-I
	as      *autoscaler.Autoscaler
	keys    [][]autoscaler.RevisionKey
	held    atomic.Int64 // revisions upserted
	buckets atomic.Int64
	decided atomic.Int64 // decisions since the window began
}

// Gain and Lose implement leader.Holder: the bucket's revisions are
// upserted into this replica's autoscaler, or handed off.
func (r *replica) Gain(_ context.Context, i int) {
	for _, k := range r.keys[i] {
		if err := r.as.Upsert(k, map[string]string{config.AnnotationTarget: "10"}); err != nil {
			panic(err)
		}
	}
	r.held.Add(int64(len(r.keys[i])))
	r.buckets.Add(1)
}

func (r *replica) Lose(ctx context.Context, i int) {
	r.as.Handoff(ctx, r.keys[i]...)
	r.held.Add(-int64(len(r.keys[i])))
	r.buckets.Add(-1)
}

// onePod is every revision's platform: one ready pod.
type onePod struct{}

func (onePod) ReadyPods(context.Context, autoscaler.RevisionKey) ([]autoscaler.Pod, error) {
	return []autoscaler.Pod{{Name: "pod-0", StatsAddr: "pod-0:9090", Started: time.Unix(0, 0)}}, nil
}
func (onePod) Scale(context.Context, autoscaler.RevisionKey, int32) error             { return nil }
func (onePod) SetActivatorInPath(context.Context, autoscaler.RevisionKey, bool) error { return nil }

// steadyLoad is every pod's stats: a load that varies with the second.
type steadyLoad struct{}

func (steadyLoad) Scrape(_ context.Context, p autoscaler.Pod) (stats.Stat, error) {
	s := time.Now().Unix()
	return stats.Stat{Source: stats.SourceQueueProxy, PodName: p.Name, Period: time.Second,
		AverageConcurrency: float64(5 + s%7), RequestCount: uint64(20 + s%11)}, nil
}

// start runs n replicas on a fake cluster of their own until ctx ends.
func start(ctx context.Context, name string, keys [][]autoscaler.RevisionKey, n int) *setup {
	s := &setup{name: name}
	for _, k := range keys {
		s.total += len(k)
	}
	client := fake.NewClientset()
	clustertest.Optimistic(client, "leases")
	for i := range n {
		r := &replica{label: fmt.Sprintf("%s/replica-%d", name, i), keys: keys}
		r.as = autoscaler.New(autoscaler.Options{Platform: onePod{}, Scraper: steadyLoad{},
			OnDecision: func(autoscaler.RevisionKey, *decider.Decision, time.Time) { r.decided.Add(1) }})
		b, err := leader.NewBuckets(leader.BucketOptions{Client: client, Namespace: config.SystemNamespace, Identity: r.label[len(name)+1:],
			Count: *buckets, Admin: r.label + ":9091", Stats: r.label + ":9093", Holder: r})
		if err != nil {
			panic(err)
		}
		s.reps = append(s.reps, r)
		labels := pprof.Labels("replica", r.label)
		s.wg.Go(func() { pprof.Do(ctx, labels, func(ctx context.Context) { _ = r.as.Run(ctx) }) })
		s.wg.Go(func() { pprof.Do(ctx, labels, func(ctx context.Context) { _ = b.Run(ctx) }) })
	}
	return s
}

// settle waits until the replicas hold every revision, their buckets
// within one of each other, for 3 seconds in a row.
func (s *setup) settle() {
	for settled := 0; settled < 3; time.Sleep(time.Second) {
		held, lo, hi := 0, int64(1<<62), int64(0)
		for _, r := range s.reps {
			held += int(r.held.Load())
			lo, hi = min(lo, r.buckets.Load()), max(hi, r.buckets.Load())
		}
		if held == s.total && hi-lo <= 1 {
			settled++
		} else {
			settled = 0
		}
	}
}

func (s *setup) reset() {
	for _, r := range s.reps {
		r.decided.Store(0)
	}
}

func (s *setup) decisions() float64 {
	var n int64
	for _, r := range s.reps {
		n += r.decided.Load()
	}
	return float64(max(n, 1))
}

// cpu is the setup's CPU seconds in a profile's shares.
func (s *setup) cpu(shares map[string]float64) float64 {
	var c float64
	for _, r := range s.reps {
		c += shares[r.label]
	}
	return c
}

// profile takes a CPU profile for d and returns each replica label's CPU
// seconds, read by `go tool pprof -tags`; the samples of no replica (the
// runtime's own, the garbage collector) are spread over the labels as
// their own samples are.
func profile(d time.Duration) map[string]float64 {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		panic(err)
	}
	time.Sleep(d)
	pprof.StopCPUProfile()
	f, err := os.CreateTemp("", "shard-bench-*.pprof")
	if err != nil {
		panic(err)
	}
	defer os.Remove(f.Name())
	_, _ = f.Write(buf.Bytes())
	f.Close()
	out, err := exec.Command("go", "tool", "pprof", "-tags", f.Name()).Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "shard-bench: go tool pprof -tags: %v\n", err)
		os.Exit(1)
	}
	return tagSeconds(string(out))
}

// tagSeconds reads the replica tag's lines of `go tool pprof -tags`
// ("replica: Total X of Y", then one line per label), and spreads the
// profile's unlabelled samples (Y-X) over the labels as theirs are.
func tagSeconds(out string) map[string]float64 {
	head := regexp.MustCompile(`^\s*replica: Total ([0-9.]+)(ns|us|µs|ms|s) of ([0-9.]+)(ns|us|µs|ms|s)`)
	line := regexp.MustCompile(`^\s*([0-9.]+)(ns|us|µs|ms|s)\s+\(\s*[0-9.]+%\):\s+(\S+)`)
	seconds := map[string]float64{}
	scale := 0.0
	for _, l := range strings.Split(out, "\n") {
		if m := head.FindStringSubmatch(l); m != nil {
			if labelled := value(m[1], m[2]); labelled > 0 {
				scale = value(m[3], m[4]) / labelled
			}
			continue
		}
		if m := line.FindStringSubmatch(l); m != nil && scale > 0 && strings.Contains(m[3], "/replica-") {
			seconds[m[3]] += value(m[1], m[2]) * scale
		}
	}
	return seconds
}

func value(num, unit string) float64 {
	v, _ := strconv.ParseFloat(num, 64)
	switch unit {
	case "ns":
		return v * 1e-9
	case "us", "µs":
		return v * 1e-6
	case "ms":
		return v * 1e-3
	}
	return v
}
