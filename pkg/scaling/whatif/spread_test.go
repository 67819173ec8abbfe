package whatif

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"ebb.dev/ebb/pkg/config"
)

// collect returns every arrival second of fn under spread and seed.
func collect(fn *Function, spread Spread, seed uint64) []int64 {
	var out []int64
	a := newArrivals(fn, spread, seed)
	for s, ok := a.next(); ok; s, ok = a.next() {
		out = append(out, s)
	}
	return out
}

// TestRandomArrivals: random arrivals keep each minute's count in its
// minute, ascend, repeat for a seed (whatever other functions run), and
// differ between seeds and between functions.
func TestRandomArrivals(t *testing.T) {
	counts := []uint32{1, 0, 3, 60, 1, 250, 0, 2}
	f := Function{Hash: "a", Invocations: counts}
	got := collect(&f, SpreadRandom, 1)
	if len(got) != 317 || !slices.IsSorted(got) {
		t.Fatalf("%d arrivals, sorted %v; want 317, sorted", len(got), slices.IsSorted(got))
	}
	perMinute := make([]uint32, len(counts))
	for _, s := range got {
		perMinute[s/60]++
	}
	if !slices.Equal(perMinute, counts) {
		t.Errorf("arrivals by minute %v, want %v", perMinute, counts)
	}
	if again := collect(&f, SpreadRandom, 1); !slices.Equal(again, got) {
		t.Errorf("seed 1 twice: %v and %v", got, again)
	}
	if other := collect(&f, SpreadRandom, 2); slices.Equal(other, got) {
		t.Error("seeds 1 and 2 gave the same arrivals")
	}
	g := Function{Hash: "b", Invocations: counts}
	if slices.Equal(collect(&g, SpreadRandom, 1), got) {
		t.Error("two functions got the same arrivals")
	}
	// A minute's lone request comes at second 30 only by the even spread.
	lone := Function{Hash: "lone", Invocations: slices.Repeat([]uint32{1}, 600)}
	secs := map[int64]int{}
	for _, s := range collect(&lone, SpreadRandom, 7) {
		secs[s%60]++
	}
	if len(secs) < 50 {
		t.Errorf("600 lone requests fell on %d seconds of the minute; want nearly all 60", len(secs))
	}
	for _, s := range collect(&lone, SpreadEven, 7) {
		if s%60 != 30 {
			t.Fatalf("even spread: a lone request at second %d of its minute, want 30", s%60)
		}
	}
	// A request log is taken as it is, whatever the spread.
	logged := Function{Hash: "a", Invocations: counts, Arrivals: []int64{3, 4, 200}}
	if l := collect(&logged, SpreadRandom, 1); !slices.Equal(l, logged.Arrivals) {
		t.Errorf("a request log under random arrivals became %v", l)
	}
}

func TestParseSpread(t *testing.T) {
	for _, s := range []Spread{SpreadEven, SpreadRandom} {
		if got, err := ParseSpread(s.String()); err != nil || got != s {
			t.Errorf("ParseSpread(%q) = %v, %v", s.String(), got, err)
		}
	}
	if _, err := ParseSpread("uniform"); err == nil || !bytes.Contains([]byte(err.Error()), []byte(`"random"`)) {
		t.Errorf(`ParseSpread("uniform"): %v; want an error naming the spreads`, err)
	}
}

// TestSeedsRepeatAndDiffer: whole runs on random arrivals give the same
// bytes for a seed and other results for another seed.
func TestSeedsRepeatAndDiffer(t *testing.T) {
	fns := []Function{
		{Hash: "f", Invocations: minutes(120, map[int]uint32{3: 1, 9: 4, 10: 1, 40: 2, 41: 1, 77: 6, 100: 1}), Duration: 200 * time.Millisecond},
		{Hash: "g", Invocations: minutes(120, map[int]uint32{1: 2, 5: 1, 6: 1, 7: 1, 60: 30}), Duration: 2 * time.Second},
	}
	o := func(seed uint64) Options {
		return Options{Revision: revision(t, map[string]string{config.AnnotationScaleToZeroPolicy: config.ScaleToZeroLearned}),
			ColdStart: time.Second, Spread: SpreadRandom, Seed: seed, StartCost: time.Second}
	}
	a, b := runAll(t, fns, o(1)), runAll(t, fns, o(1))
	if !bytes.Equal(a, b) {
		t.Errorf("seed 1 twice:\n%s\n%s", a, b)
	}
	if c := runAll(t, fns, o(2)); bytes.Equal(a, c) {
		t.Errorf("seeds 1 and 2 gave the same results:\n%s", a)
	}
}

// TestRandomVersusEven: a timer every 5 minutes has all its gaps end at
// second 30 of a minute under the even spread, and the learned policy
// pre-warms it for nearly every request; with its requests at random
// seconds the same policy places them only as well as their gaps allow, and has
// at least twice the cold starts (Knative's policy, which reads no second, has about as many on
// both).
func TestRandomVersusEven(t *testing.T) {
	counts := map[int]uint32{}
	for m := 1; m <= 600; m += 5 {
		counts[m] = 1
	}
	fn := Function{Hash: "timer", Invocations: minutes(600, counts), Duration: 200 * time.Millisecond}
	learned := revision(t, map[string]string{config.AnnotationScaleToZeroPolicy: config.ScaleToZeroLearned})
	run := func(rev *config.Revision, spread Spread) Result {
		return Run(&fn, Options{Revision: rev, ColdStart: time.Second, Spread: spread, Seed: 1})
	}
	le, lr := run(learned, SpreadEven), run(learned, SpreadRandom)
	ke, kr := run(revision(t, nil), SpreadEven), run(revision(t, nil), SpreadRandom)
	if le.Requests != 120 || lr.Requests != 120 || le.ColdStarts > 12 || lr.ColdStarts < 2*le.ColdStarts ||
		abs(ke.ColdStarts-kr.ColdStarts) > 6 {
		t.Errorf("learned: %d cold starts of %d (even), %d of %d (random); knative: %d (even), %d (random); "+
			"want <= 12 even, >= 2x that random, knative within 6", le.ColdStarts, le.Requests, lr.ColdStarts, lr.Requests,
			ke.ColdStarts, kr.ColdStarts)
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestStartCost: the cost is the idle replica-seconds plus the start cost
// for each replica start, per function and in the summary, which sums
// them as it sums the contract's integers and *Seconds fields.
func TestStartCost(t *testing.T) {
	// One cold request in minute 20: the initial-scale replica (gone by
	// then) and the request's are the two starts.
	fn := Function{Hash: "f", Invocations: minutes(30, map[int]uint32{20: 1}), Duration: 100 * time.Millisecond}
	free := Run(&fn, Options{Revision: revision(t, nil), ColdStart: time.Second})
	r := Run(&fn, Options{Revision: revision(t, nil), ColdStart: time.Second, StartCost: 90 * time.Second})
	if r.ReplicaStarts != 2 || free.ReplicaStarts != 2 {
		t.Fatalf("%d and %d replica starts, want 2", r.ReplicaStarts, free.ReplicaStarts)
	}
	if free.Cost() != free.IdleReplicaSeconds() || r.Cost() != r.IdleReplicaSeconds()+180 {
		t.Errorf("cost %v with no start cost (idle %v), %v with 90s a start (idle %v); want idle, idle+180",
			free.Cost(), free.IdleReplicaSeconds(), r.Cost(), r.IdleReplicaSeconds())
	}
	sum := NewSummary("knative")
	sum.Merge(&r)
	sum.Merge(&r)
	var line map[string]any
	if err := json.Unmarshal(sum.AppendJSON(nil), &line); err != nil {
		t.Fatal(err)
	}
	if line["replicaStarts"] != 4.0 || math.Abs(line["costReplicaSeconds"].(float64)-2*r.Cost()) > 1e-9 {
		t.Errorf("summary of two: replicaStarts %v, costReplicaSeconds %v; want 4, %v", line["replicaStarts"],
			line["costReplicaSeconds"], 2*r.Cost())
	}
}
