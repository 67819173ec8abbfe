// Package paired compares load runs of several targets (a proxy and the
// bare proxy it is judged against) measured in the same run on a shared,
// noisy machine. Each round is cut into short slices; in each slice every
// target runs once, in an order that rotates from slice to slice
// (Order), so neighbours' load, which drifts over seconds, falls on all
// targets alike. A ratio is taken within each slice, from runs seconds
// apart, and summarized by its median and spread over all slices and per
// round (Compare): one slow slice moves a median little, where it moves
// a mean of a few long runs a lot.
package paired

import (
	"fmt"
	"slices"
	"strings"
)

// Sample is one load run of one target in one slice.
type Sample struct {
	Test, Target string // e.g. "wrk", "queue-proxy"
	Round, Slice int
	RPS          float64 // requests per second
	Requests     float64 // requests answered
	CPUSeconds   float64 // CPU time of the target's process meanwhile (0: not measured)
}

// Order is the order in which targets run in a slice: rotated by one
// place per slice, so each runs first, and next to each other, equally
// often.
func Order(targets []string, round, slice int) []string {
	n := len(targets)
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, targets[(i+round+slice)%n])
	}
	return out
}

// Comparison is a target's throughput and CPU per request against
// another's, over the slices in which both ran.
type Comparison struct {
	Slices         int
	Median, Q1, Q3 float64   // of the slices' throughput ratios
	Rounds         []float64 // per round, the median of its slices' ratios
	CPU            float64   // CPU per request over all slices, num's over den's (0: not measured)
	RoundsCPU      []float64 // per round, the same
}

// Compare compares num with den in test.
func Compare(samples []Sample, test, num, den string) Comparison {
	type key struct{ round, slice int }
	a, b := map[key]Sample{}, map[key]Sample{}
	for _, s := range samples {
		switch {
		case s.Test != test:
		case s.Target == num:
			a[key{s.Round, s.Slice}] = s
		case s.Target == den:
			b[key{s.Round, s.Slice}] = s
		}
	}
	var all []float64
	perRound := map[int][]float64{}
	cpu := map[int]*[4]float64{} // per round: num CPU, num requests, den CPU, den requests
	var rounds []int
	for k, x := range a {
		y, ok := b[k]
		if !ok || y.RPS <= 0 {
			continue
		}
		if _, seen := perRound[k.round]; !seen {
			rounds = append(rounds, k.round)
			cpu[k.round] = &[4]float64{}
		}
		r := x.RPS / y.RPS
		all = append(all, r)
		perRound[k.round] = append(perRound[k.round], r)
		c := cpu[k.round]
		c[0], c[1], c[2], c[3] = c[0]+x.CPUSeconds, c[1]+x.Requests, c[2]+y.CPUSeconds, c[3]+y.Requests
	}
	slices.Sort(rounds)
	c := Comparison{Slices: len(all)}
	if len(all) == 0 {
		return c
	}
	c.Q1, c.Median, c.Q3 = quantile(all, 0.25), quantile(all, 0.5), quantile(all, 0.75)
	var tot [4]float64
	for _, r := range rounds {
		c.Rounds = append(c.Rounds, quantile(perRound[r], 0.5))
		rc := cpu[r]
		c.RoundsCPU = append(c.RoundsCPU, cpuRatio(rc))
		for i := range tot {
			tot[i] += rc[i]
		}
	}
	c.CPU = cpuRatio(&tot)
	return c
}

func cpuRatio(c *[4]float64) float64 {
	if c[0] <= 0 || c[1] <= 0 || c[2] <= 0 || c[3] <= 0 {
		return 0
	}
	return (c[0] / c[1]) / (c[2] / c[3])
}

// quantile is the q-quantile of xs, interpolated between neighbours.
func quantile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}

// Throughput describes the throughput ratio: its median, the middle half
// of the slices, and the rounds.
func (c Comparison) Throughput() string {
	return fmt.Sprintf("%.2f (middle half of %d slices %.2f-%.2f; rounds %s)", c.Median, c.Slices, c.Q1, c.Q3, list(c.Rounds))
}

// CPUPerRequest describes the CPU ratio, over all slices and per round.
func (c Comparison) CPUPerRequest() string {
	return fmt.Sprintf("%.2f (rounds %s)", c.CPU, list(c.RoundsCPU))
}

func list(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(parts, " ")
}
