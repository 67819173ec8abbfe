// Command autoscaler-bench drives one in-process autoscaler with many
// simulated revisions: fake platform and stats sources, the real schedule,
// workers, collector, decider and history. It prints the cores used, CPU
// per revision-tick, memory per revision and the tick-to-decision latency
// (from the moment a revision's second was due, at its phase, to its
// decision applied).
//
// Three kinds of rows:
//
//   - -revisions: revisions with traffic, -pods ready pods each, a share
//     (-hpa-share) of the HPA class on cpu;
//
//   - -zero: revisions at zero without traffic (no pod, no report), the
//     most of a serverless population;
//
//   - -http-pods: revisions whose pods are fake queue-proxies served over
//     real HTTP by a child process (one address each on 127.0.0.0/8),
//     scraped by the autoscaler's own client with its Prometheus metrics:
//     the CPU per scraped pod-second, to size a fleet.
//
//     go run ./bench/autoscaler -revisions 10000,100000 -zero 1000000 -hpa-share 0.25
//     go run ./bench/autoscaler -revisions ” -http-pods 3000
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

var (
	memProfile   = flag.String("memprofile", "", "write a heap profile after the warm-up (of the last row)")
	cpuProfile   = flag.String("cpuprofile", "", "write a CPU profile of the measured time (of the last row)")
	execTrace    = flag.String("trace", "", "write an execution trace (runtime/trace) of the measured time (of the last row): where a late decision waited")
	warmup       = flag.Duration("warmup", 25*time.Second, "time before measuring: long enough to fill the decision history (10 decisions)")
	duration     = flag.Duration("duration", 20*time.Second, "measured time per row (after the warm-up)")
	hpaShare     = flag.Float64("hpa-share", 0, "share of the revisions with traffic of the HPA class on cpu (50% of a 100m request), read through PodStates")
	podCount     = flag.Int("pods", 3, "ready pods per revision with traffic")
	servePods    = flag.String("serve-pods", "", "internal: serve the given count of fake queue-proxies (the -http-pods child)")
	statusWrites = flag.Float64("status-writes", 0, "run the RevisionAutoscaler status writer at this limit of writes/s against a counting fake API (0: none)")
	withMetrics  = flag.Bool("metrics", false, "register the autoscaler's Prometheus metrics in the traffic and zero rows too (the HTTP rows always do, as cmd/autoscaler)")
)

func main() {
	counts := flag.String("revisions", "10000,100000", "counts of revisions with traffic to run, comma-separated ('' for none)")
	zero := flag.String("zero", "", "counts of revisions at zero without traffic to run, comma-separated")
	httpPods := flag.String("http-pods", "", "counts of pods scraped over HTTP to run, comma-separated")
	flag.Parse()
	if *servePods != "" {
		if err := serveFakePods(*servePods); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	// The table is written once all rows are measured (so that its
	// columns line up); each row's numbers go to stderr as it ends.
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "revisions\tkind\tcores used\tCPU µs/revision/tick\tmemory KiB/revision\tdecisions\tof the HPA class (failing: 1 in 64 checked)\tlatency p50 ms\tp99 ms\tmax ms\t")
	rows := []struct {
		flag string
		kind population
	}{{*counts, withTraffic}, {*zero, atZero}, {*httpPods, overHTTP}}
	var notes []string
	for _, row := range rows {
		for _, n := range parseCounts(row.flag) {
			r := measure(row.kind, n)
			line := fmt.Sprintf("%d\t%s\t%.3f\t%.2f\t%.2f\t%d\t%d (%d)\t%.2f\t%.2f\t%.2f\t", r.revisions, row.kind, r.cores, r.cpuPerTick,
				r.kibPerRev, r.decisions, r.hpa, r.hpaFailing, r.p50, r.p99, r.max)
			fmt.Fprintln(tw, line)
			fmt.Fprintln(os.Stderr, "measured:", strings.ReplaceAll(line, "\t", " "))
			if *statusWrites > 0 {
				notes = append(notes, fmt.Sprintf("    %d revisions (%s): %.1f RevisionAutoscaler status writes/s (limit %g/s), %d changed revisions waiting at the end",
					n, row.kind, r.statusWritesPerSec, *statusWrites, r.statusWaiting))
			}
			if row.kind == overHTTP {
				notes = append(notes, fmt.Sprintf("    %d pods scraped over HTTP: %d scrapes, %.2f µs of autoscaler CPU per scraped pod-second (%.3f cores per 1,000 pods)",
					n, r.scrapes, r.cpuPerScrape, r.cpuPerScrape/1000))
			}
		}
	}
	tw.Flush()
	for _, n := range notes {
		fmt.Println(n)
	}
}

func parseCounts(s string) []int {
	var out []int
	for _, c := range strings.Split(s, ",") {
		if c = strings.TrimSpace(c); c == "" {
			continue
		}
		n, err := strconv.Atoi(c)
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "count %q: want whole numbers\n", c)
			os.Exit(2)
		}
		out = append(out, n)
	}
	return out
}
