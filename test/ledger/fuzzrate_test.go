package ledger

import (
	"maps"
	"slices"
	"testing"
	"time"
)

// BenchmarkDifferentialH2 plays FuzzDifferentialH2's seeds (h2Seeds and
// the program seeds), one after another, through a rig as the fuzz
// function does, and reports inputs a second (the cost of an input
// without the fuzzing engine's own: coverage, mutation, minimizing) and
// the share of inputs played twice (the first play differed).
func BenchmarkDifferentialH2(b *testing.B) {
	seeds := h2Seeds()
	var inputs [][]byte
	for _, name := range slices.Sorted(maps.Keys(seeds)) {
		inputs = append(inputs, seeds[name])
	}
	for _, p := range progSeedsH2 {
		inputs = append(inputs, programH2(p[1:]))
	}
	g := newRig(b)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		stream := expandRepeats(inputs[i%len(inputs)])
		g.input(b, stream, playH2, h2Refused, sortSeen)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "inputs/s")
	b.ReportMetric(float64(g.replays)/float64(b.N), "replays/input")
}
