package whatif

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/decider"

	"ebb.dev/ebb/internal/golden"
)

func revision(t *testing.T, ann map[string]string) *config.Revision {
	t.Helper()
	rev, err := config.NewRevision(config.Defaults(), ann, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// minutes returns a trace of n minutes with the given counts at the given
// minutes (1-based).
func minutes(n int, counts map[int]uint32) []uint32 {
	out := make([]uint32, n)
	for m, c := range counts {
		out[m-1] = c
	}
	return out
}

func TestRunOneColdRequest(t *testing.T) {
	tests := []struct {
		name     string
		cold     time.Duration
		wantWait float64
	}{
		{name: "waits for the cold start", cold: time.Second, wantWait: 1000},
		{name: "a zero cold start still finds no ready replica", cold: 0, wantWait: 0},
		{name: "a long cold start", cold: 7 * time.Second, wantWait: 7000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The replica of initial-scale 1 is gone long before minute 20.
			fn := Function{Hash: "f", Invocations: minutes(30, map[int]uint32{20: 1}), Duration: 100 * time.Millisecond}
			r := Run(&fn, Options{Revision: revision(t, nil), ColdStart: tt.cold})
			got := struct {
				Requests, ColdStarts, FromZero int64
				Wait                           float64
			}{r.Requests, r.ColdStarts, r.ScaleFromZero, r.WaitPercentileMs(50)}
			want := got
			want.Requests, want.ColdStarts, want.FromZero, want.Wait = 1, 1, 2, tt.wantWait
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			checkIntegrals(t, &r)
		})
	}
}

func checkIntegrals(t *testing.T, r *Result) {
	t.Helper()
	if r.IdleReplicaSeconds() < 0 || r.IdleReplicaSeconds() > r.ReplicaSeconds() {
		t.Errorf("idle replica-seconds %v, replica-seconds %v: want 0 <= idle <= all", r.IdleReplicaSeconds(), r.ReplicaSeconds())
	}
}

func TestRunWarmRequestsDoNotWait(t *testing.T) {
	// min-scale 1 keeps a replica all along: after the first one is ready,
	// no request is cold and the replica exists for the whole trace.
	fn := Function{Hash: "f", Invocations: minutes(60, map[int]uint32{10: 5, 40: 3}), Duration: 50 * time.Millisecond}
	r := Run(&fn, Options{Revision: revision(t, map[string]string{config.AnnotationMinScale: "1"}), ColdStart: time.Second})
	if r.ColdStarts != 0 || r.WaitPercentileMs(99) != 0 || r.ScaleFromZero != 1 || r.PeakReplicas != 1 {
		t.Errorf("cold starts %d, p99 wait %v, from zero %d, peak %d: want 0, 0, 1, 1", r.ColdStarts, r.WaitPercentileMs(99),
			r.ScaleFromZero, r.PeakReplicas)
	}
	// One replica from its creation at second 1 to the end (second 3600).
	if got, want := r.ReplicaSeconds(), 3599.0; got != want {
		t.Errorf("replica-seconds %v, want %v", got, want)
	}
	if got, want := r.replicaNs-r.idleNs, int64(1400*time.Millisecond); got != want {
		t.Errorf("non-idle replica-seconds %v, want %v (the cold start and 8 requests of 50ms)", got, want)
	}
}

func TestRunScalesOutUnderLoad(t *testing.T) {
	// 6,000 requests a minute of 2s each keep about 200 in flight: with a
	// per-pod target of 70 (Knative's 100 at 70%) that needs 3 replicas.
	fn := Function{Hash: "f", Invocations: minutes(20, map[int]uint32{5: 6000, 6: 6000, 7: 6000, 8: 6000}), Duration: 2 * time.Second}
	r := Run(&fn, Options{Revision: revision(t, nil), ColdStart: time.Second})
	if r.PeakReplicas < 3 {
		t.Errorf("peak replicas %d, want at least 3", r.PeakReplicas)
	}
	checkIntegrals(t, &r)
}

func loadFixture(t *testing.T) []Function {
	t.Helper()
	open := func(name string) *os.File {
		f, err := os.Open(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	fns, err := ParseInvocations(open("invocations.csv"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := ParseDurations(open("durations.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if err := JoinDurations(fns, d); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseMemory(open("memory.csv")); err != nil {
		t.Fatal(err)
	}
	return fns
}

func runAll(t *testing.T, fns []Function, o Options) []byte {
	t.Helper()
	var b []byte
	sum := NewSummary(PolicyOf(o.Revision))
	for i := range fns {
		r := Run(&fns[i], o)
		sum.Merge(&r)
		b = append(r.AppendJSON(b), '\n')
	}
	return append(sum.AppendJSON(b), '\n')
}

// TestGolden runs the six functions of testdata with the defaults and a
// 1s cold start (and start cost); -update rewrites the golden file, to be read as a diff.
func TestGolden(t *testing.T) {
	tests := []struct {
		file string
		ann  map[string]string
	}{
		{file: "whatif.golden.jsonl"},
		{file: "whatif-learned.golden.jsonl", ann: map[string]string{config.AnnotationScaleToZeroPolicy: config.ScaleToZeroLearned}},
	}
	fns := loadFixture(t)
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got := runAll(t, fns, Options{Revision: revision(t, tt.ann), ColdStart: time.Second, StartCost: time.Second})
			path := filepath.Join("testdata", tt.file)
			golden.Check(t, path, got)
		})
	}
}

// TestLearnedTimer: a function invoked once every 5 minutes all day starts
// cold at nearly every invocation with Knative's policy (its replica goes
// after about 90 s); the learned policy pre-warms it once it has seen ten
// gaps, and spends less idle replica time doing so.
func TestLearnedTimer(t *testing.T) {
	counts := map[int]uint32{}
	for m := 1; m <= minutesPerDay; m += 5 {
		counts[m] = 1
	}
	fn := Function{Hash: "timer", Invocations: minutes(minutesPerDay, counts), Duration: 200 * time.Millisecond}
	kn := Run(&fn, Options{Revision: revision(t, nil), ColdStart: time.Second})
	ln := Run(&fn, Options{Revision: revision(t, map[string]string{config.AnnotationScaleToZeroPolicy: "learned"}), ColdStart: time.Second})
	if kn.ColdStarts < 280 || ln.ColdStarts > 15 || ln.IdleReplicaSeconds() >= kn.IdleReplicaSeconds() || ln.Policy != "learned" {
		t.Errorf("knative: %d cold starts, %.0f idle replica-s; learned (%s): %d, %.0f; want >= 280 against <= 15, and less idle time",
			kn.ColdStarts, kn.IdleReplicaSeconds(), ln.Policy, ln.ColdStarts, ln.IdleReplicaSeconds())
	}
}

func TestDeterministic(t *testing.T) {
	// The busiest function is left out: the goldens cover it, and twice
	// more would be long under the race detector.
	fns := slices.DeleteFunc(loadFixture(t), func(f Function) bool { return f.requests() > 10_000 })
	o := Options{Revision: revision(t, nil), ColdStart: time.Second}
	a, b := runAll(t, fns, o), runAll(t, fns, o)
	if !bytes.Equal(a, b) {
		t.Errorf("two runs differ:\n%s\n%s", a, b)
	}
}

// A request log (Function.Arrivals) of the seconds the per-minute model
// would spread the invocations to gives the same run, decision for
// decision.
func TestArrivalsLikeInvocations(t *testing.T) {
	counts := map[int]uint32{1: 3, 2: 1, 9: 2, 10: 5}
	spread := Function{Hash: "f", Invocations: minutes(12, counts), Duration: 300 * time.Millisecond}
	var log []int64
	for m := 1; m <= 12; m++ {
		for i := range int(counts[m]) {
			log = append(log, arrivalSecond(m, i, int(counts[m])))
		}
	}
	logged := Function{Hash: "f", Invocations: make([]uint32, 12), Duration: 300 * time.Millisecond, Arrivals: log}
	type decision struct {
		Sec     int64
		Desired int32
	}
	run := func(fn *Function) (Result, []decision) {
		var decs []decision
		r := Run(fn, Options{Revision: revision(t, nil), ColdStart: time.Second,
			OnDecision: func(sec int64, d *decider.Decision) { decs = append(decs, decision{sec, d.Desired}) }})
		return r, decs
	}
	wantR, wantD := run(&spread)
	gotR, gotD := run(&logged)
	if diff := cmp.Diff(wantD, gotD); diff != "" {
		t.Errorf("decisions from the log (-spread +log):\n%s", diff)
	}
	if wantR.Requests != 11 || gotR.Requests != wantR.Requests || gotR.ColdStarts != wantR.ColdStarts ||
		gotR.IdleReplicaSeconds() != wantR.IdleReplicaSeconds() || len(gotD) == 0 {
		t.Errorf("from the log: %d requests, %d cold, %.1f idle replica-s, %d decisions; spread: %d, %d, %.1f",
			gotR.Requests, gotR.ColdStarts, gotR.IdleReplicaSeconds(), len(gotD), wantR.Requests, wantR.ColdStarts, wantR.IdleReplicaSeconds())
	}
}

// TestLearnedLeadFollowsStartUp: with the learned policy's defaults the
// pre-warm lead is learned from the replica start-ups the decider sees
// (prewarm-lead auto): a timer every 5 minutes is pre-warmed a tick (2s)
// plus the start-up ahead of each request once the policy has its gaps,
// 3s for a 1s cold start and 7s for a 5s one, and no request after the
// 7th waits.
func TestLearnedLeadFollowsStartUp(t *testing.T) {
	counts := map[int]uint32{}
	for m := 1; m <= 180; m += 5 {
		counts[m] = 1
	}
	fn := Function{Hash: "timer", Invocations: minutes(180, counts), Duration: 100 * time.Millisecond}
	for _, tt := range []struct {
		cold time.Duration
		lead float64
	}{{time.Second, 3}, {5 * time.Second, 7}} {
		var aheads []float64
		desired := int32(0)
		o := Options{Revision: revision(t, map[string]string{config.AnnotationScaleToZeroPolicy: config.ScaleToZeroLearned}), ColdStart: tt.cold,
			OnDecision: func(sec int64, dec *decider.Decision) {
				for _, r := range dec.Reasons() {
					if r.Code == decider.PreWarm && sec > 7*300 && desired == 0 { // the pre-warm that starts the replica
						aheads = append(aheads, r.Values()[0]) // the seconds until the expected request
					}
				}
				desired = dec.Desired
			}}
		r := Run(&fn, o)
		cold := int(r.ColdStarts)
		if len(aheads) == 0 || cold > 7 {
			t.Fatalf("cold start %v: %d pre-warms after the 7th request, %d cold starts; want some and at most 7", tt.cold, len(aheads), cold)
		}
		for _, a := range aheads {
			// Decided on the first tick (every 2s) at which the second kept
			// for lies within the lead: lead-1 or lead seconds ahead.
			if a != tt.lead && a != tt.lead-1 {
				t.Errorf("cold start %v: a pre-warm %vs ahead, want %v or %v (a 2s tick plus the start-up)", tt.cold, a, tt.lead-1, tt.lead)
			}
		}
	}
}
