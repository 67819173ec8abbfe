// Command summary prints the ratios of bench/queueproxy/run.sh: the
// queue-proxy against the bare proxy (and, with BASELINE_REF, against the
// queue-proxy of that commit) for each load tool, from the slices of the
// run (bench/internal/paired). It reads the run's samples on stdin, one a
// line: tool, target, round, slice, req/s, requests, CPU seconds,
// separated by tabs.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"ebb.dev/ebb/bench/internal/paired"
)

// The targets of issue 24: throughput at least, CPU per request at most,
// of the bare proxy's in the same run.
const (
	targetThroughput = 0.95
	targetCPU        = 1.10
)

func main() {
	samples, err := read(bufio.NewScanner(os.Stdin))
	if err != nil {
		fmt.Fprintln(os.Stderr, "summary:", err)
		os.Exit(1)
	}
	check := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "MISSED"
	}
	for _, tool := range []string{"wrk", "hey"} {
		c := paired.Compare(samples, tool, "queue-proxy", "baseline")
		if c.Slices == 0 {
			continue
		}
		fmt.Printf("  %s: throughput queue-proxy/baseline %s, target >= %.2f: %s\n", tool, c.Throughput(), targetThroughput,
			check(c.Median >= targetThroughput))
		fmt.Printf("  %s: CPU per request queue-proxy/baseline %s, target <= %.2f: %s\n", tool, c.CPUPerRequest(), targetCPU,
			check(c.CPU <= targetCPU))
		if r := paired.Compare(samples, tool, "queue-proxy", "queue-proxy@ref"); r.Slices > 0 {
			b := paired.Compare(samples, tool, "queue-proxy@ref", "baseline")
			fmt.Printf("  %s: this tree / BASELINE_REF: throughput %s, CPU per request %s\n", tool, r.Throughput(), r.CPUPerRequest())
			fmt.Printf("  %s: BASELINE_REF / baseline: throughput %s, CPU per request %s\n", tool, b.Throughput(), b.CPUPerRequest())
		}
	}
}

func read(sc *bufio.Scanner) ([]paired.Sample, error) {
	var out []paired.Sample
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 7 {
			return nil, fmt.Errorf("line %q: want 7 fields", sc.Text())
		}
		var n [5]float64
		for i, s := range f[2:] {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("line %q: field %d: %w", sc.Text(), i+3, err)
			}
			n[i] = v
		}
		out = append(out, paired.Sample{Test: f[0], Target: f[1], Round: int(n[0]), Slice: int(n[1]), RPS: n[2], Requests: n[3],
			CPUSeconds: n[4]})
	}
	return out, sc.Err()
}
