// Command shard-bench measures what sharding the autoscaler costs: the
// same revisions decided by one replica, then by several sharing them
// through real bucket ownership (leader.Buckets on the Leases of a fake
// clientset, each replica an autoscaler of its own in this process). It
// prints each replica's share of the revisions and of the CPU (pprof
// labels), and the fleet's CPU against the single replica's: the cost of
// sharding is the difference, and per-revision cost is the autoscaler's
// (bench/autoscaler).
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
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/bucket"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/decider"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster/clustertest"
	"ebb.dev/ebb/pkg/platform/kubernetes/leader"
	"ebb.dev/ebb/pkg/stats"
)

var (
	revisions = flag.Int("revisions", 300000, "revisions shared by the fleet")
	replicas  = flag.Int("replicas", 3, "replicas of the fleet")
	buckets   = flag.Int("buckets", bucket.DefaultCount, "buckets (--buckets)")
	warmup    = flag.Duration("warmup", 25*time.Second, "time before measuring: the revisions' windows and histories fill")
	duration  = flag.Duration("duration", 20*time.Second, "measured time of each setup")
)

func main() {
	flag.Parse()
	if err := bucket.CheckCount(*buckets); err != nil || *replicas < 1 || *revisions < 1 {
		fmt.Fprintln(os.Stderr, "shard-bench: -buckets, -replicas and -revisions must be positive (buckets within [1, 100])")
		os.Exit(2)
	}
	keys := revisionKeys(*revisions, *buckets)
	one := run(keys, 1)
	fleet := run(keys, *replicas)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "setup\treplica\tbuckets\trevisions\tshare of revisions\tcores\tshare of CPU\tdecisions/s\t")
	for _, r := range []result{one, fleet} {
		for _, p := range r.replicas {
			fmt.Fprintf(tw, "%d replica(s)\t%s\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.0f\t\n", len(r.replicas), p.name, p.buckets, p.revisions,
				float64(p.revisions)/float64(*revisions), r.cores*p.cpuShare, p.cpuShare, p.decisions/r.wall.Seconds())
		}
		fmt.Fprintf(tw, "%d replica(s)\tall\t%d\t%d\t1.000\t%.3f\t1.000\t%.0f\t\n", len(r.replicas), *buckets, *revisions, r.cores,
			r.decisions()/r.wall.Seconds())
	}
	tw.Flush()
	fmt.Printf("\nthe fleet of %d uses %.2fx the CPU of one replica for the same %d revisions (%d buckets)\n",
		*replicas, fleet.cores/one.cores, *revisions, *buckets)
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

// replica is one autoscaler and its hold on the buckets.
type replica struct {
	name      string
	as        *autoscaler.Autoscaler
	keys      [][]autoscaler.RevisionKey
	held      atomic.Int64 // revisions upserted
	buckets   atomic.Int64
	decided   atomic.Int64 // decisions while measuring
	measuring *atomic.Bool
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

type replicaResult struct {
	name                string
	buckets, revisions  int
	cpuShare, decisions float64
}

type result struct {
	replicas []replicaResult
	cores    float64
	wall     time.Duration
}

func (r result) decisions() float64 {
	var n float64
	for _, p := range r.replicas {
		n += p.decisions
	}
	return n
}

// run starts n replicas on one fake cluster, waits until they hold every
// bucket and revision, warms up, and measures.
func run(keys [][]autoscaler.RevisionKey, n int) result {
	client := fake.NewClientset()
	clustertest.Optimistic(client, "leases")
	ctx, cancel := context.WithCancel(context.Background())
	var measuring atomic.Bool
	var wg sync.WaitGroup
	reps := make([]*replica, n)
	for i := range reps {
		r := &replica{name: fmt.Sprintf("replica-%d", i), keys: keys, measuring: &measuring}
		r.as = autoscaler.New(autoscaler.Options{Platform: onePod{}, Scraper: steadyLoad{},
			OnDecision: func(autoscaler.RevisionKey, *decider.Decision) {
				if measuring.Load() {
					r.decided.Add(1)
				}
			}})
		b, err := leader.NewBuckets(leader.BucketOptions{Client: client, Namespace: config.SystemNamespace, Identity: r.name,
			Count: *buckets, Admin: r.name + ":9091", Stats: r.name + ":9093", Holder: r})
		if err != nil {
			panic(err)
		}
		reps[i] = r
		labels := pprof.Labels("replica", r.name)
		wg.Go(func() { pprof.Do(ctx, labels, func(ctx context.Context) { _ = r.as.Run(ctx) }) })
		wg.Go(func() { pprof.Do(ctx, labels, func(ctx context.Context) { _ = b.Run(ctx) }) })
	}
	total := 0
	for _, k := range keys {
		total += len(k)
	}
	for settled := 0; settled < 3; time.Sleep(time.Second) { // the shares hold for 3 seconds
		held := 0
		for _, r := range reps {
			held += int(r.held.Load())
		}
		if held == total && balanced(reps) {
			settled++
		} else {
			settled = 0
		}
	}
	time.Sleep(*warmup)
	var prof bytes.Buffer
	if err := pprof.StartCPUProfile(&prof); err != nil {
		panic(err)
	}
	measuring.Store(true)
	cpu0, wall0 := cpuTime(), time.Now()
	time.Sleep(*duration)
	cpu, wall := cpuTime()-cpu0, time.Since(wall0)
	measuring.Store(false)
	pprof.StopCPUProfile()
	res := result{cores: cpu.Seconds() / wall.Seconds(), wall: wall}
	shares := labelShares(prof.Bytes())
	for _, r := range reps {
		res.replicas = append(res.replicas, replicaResult{name: r.name, buckets: int(r.buckets.Load()), revisions: int(r.held.Load()),
			cpuShare: shares[r.name], decisions: float64(r.decided.Load())})
	}
	cancel() // every replica hands its buckets off and stops
	wg.Wait()
	runtime.GC()
	return res
}

// balanced: the buckets are spread within one of each other.
func balanced(reps []*replica) bool {
	lo, hi := int64(1<<62), int64(0)
	for _, r := range reps {
		lo, hi = min(lo, r.buckets.Load()), max(hi, r.buckets.Load())
	}
	return hi-lo <= 1
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// labelShares is each replica's share of the profile's samples, read by
// `go tool pprof -tags` (samples without a replica label, the runtime's
// own, are spread over the replicas as their labelled samples are).
func labelShares(profile []byte) map[string]float64 {
	f, err := os.CreateTemp("", "shard-bench-*.pprof")
	if err != nil {
		return nil
	}
	defer os.Remove(f.Name())
	_, _ = f.Write(profile)
	f.Close()
	out, err := exec.Command("go", "tool", "pprof", "-tags", f.Name()).Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "shard-bench: go tool pprof -tags: %v (no CPU shares)\n", err)
		return nil
	}
	shares := map[string]float64{}
	inReplica := false
	line := regexp.MustCompile(`^\s*([0-9.]+)(ns|us|µs|ms|s)\s+\(\s*[0-9.]+%\):\s+(\S+)`)
	var sum float64
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "replica:") {
			inReplica = true
			continue
		}
		if inReplica {
			m := line.FindStringSubmatch(l)
			if m == nil {
				if strings.TrimSpace(l) == "" {
					inReplica = false
				}
				continue
			}
			v, _ := strconv.ParseFloat(m[1], 64)
			shares[m[3]] += v * unit(m[2])
			sum += v * unit(m[2])
		}
	}
	for k := range shares {
		shares[k] /= sum
	}
	return shares
}

func unit(u string) float64 {
	switch u {
	case "ns":
		return 1e-9
	case "us", "µs":
		return 1e-6
	case "ms":
		return 1e-3
	}
	return 1
}
