package learned

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestDecideOnGaps is the policy's golden table: a revision sees one
// busy second after each gap of a sequence written in seconds (the first
// at second 0), then stays idle; the table says what the policy decides
// at each probe of idle time after the last request, with the numbers of
// its reason, at zero (no replica, the activator in the path) and with a
// replica ready. The sequences include a per-minute trace's requests
// placed at random seconds of their minutes (whatif's --arrivals random):
// a 5-minute timer's gaps then spread ±1 minute around 300 s.
//
// A verdict prints as KIND A B C [detail]: KeepAlive and PreWarm (A: the
// idle seconds ahead the replica is for; B of C: the gaps that ended near
// it of those that lasted into it), Release (A: seconds to the next
// second worth a replica, -1 none; B of C: the gaps that lasted this long
// of all), Fallback (A of B gaps seen), None (Knative's rules).
func TestDecideOnGaps(t *testing.T) {
	noisy5m := []int64{248, 317, 292, 341, 267, 358, 279, 305, 329, 253, 312, 297, 336, 261, 300, 284}
	tests := []struct {
		name    string
		gaps    []int64
		cost    time.Duration // the cold-start cost (testRevision's 2m when 0)
		probes  []int64       // idle seconds after the last request
		atZero  []string      // the verdict at each probe with no replica
		running []string      // the verdict at each probe with a replica ready
	}{
		{
			name: "too few gaps: Knative's rules", gaps: []int64{60, 60, 60}, probes: []int64{2, 30},
			atZero: []string{"Fallback 3 5 0", "Fallback 3 5 0"}, running: []string{"Fallback 3 5 0", "Fallback 3 5 0"},
		},
		{
			// Released after the request; pre-warmed at zero when the
			// timer's second is within the lead (10 s), kept when a replica
			// runs and it is within two leads; released once past it.
			name: "an exact 5-minute timer", gaps: repeat(300, 12), probes: []int64{2, 250, 285, 292, 300, 330},
			atZero: []string{
				"Release 238 12 12",
				"Release 50 12 12",
				"Release 15 12 12",
				"PreWarm 8 12 12 phase",
				"PreWarm 0 12 12 phase",
				"Release -1 0 12",
			},
			running: []string{
				"Release 238 12 12",
				"Release 50 12 12",
				"KeepAlive 15 12 12 phase",
				"KeepAlive 8 12 12 phase",
				"KeepAlive 0 12 12 phase",
				"Release -1 0 12",
			},
		},
		{
			// The gaps spread 248-358 s: the sequence (a gap like the
			// latest, 284 s, was followed by 4 that lasted past 277 s)
			// keeps a replica from 277 s to the longest seen.
			name: "a 5-minute timer at random seconds of its minutes", gaps: noisy5m, probes: []int64{2, 200, 240, 260, 300, 350, 370},
			atZero: []string{
				"Release 275 16 16",
				"Release 77 16 16",
				"Release 37 16 16",
				"Release 17 15 16",
				"PreWarm 0 4 4 sequence",
				"PreWarm 0 2 2 sequence",
				"Release -1 0 16",
			},
			running: []string{
				"Release 275 16 16",
				"Release 77 16 16",
				"Release 37 16 16",
				"KeepAlive 17 4 4 sequence",
				"KeepAlive 0 4 4 sequence",
				"KeepAlive 0 2 2 sequence",
				"Release -1 0 16",
			},
		},
		{
			// A dearer cold start keeps the replica from about 251 s.
			name: "the same, when a cold start costs 10 minutes", gaps: noisy5m, cost: 10 * time.Minute, probes: []int64{2, 200, 240, 260, 300, 350, 370},
			atZero: []string{
				"Release 249 16 16",
				"Release 51 16 16",
				"Release 11 16 16",
				"PreWarm 0 4 4 sequence",
				"PreWarm 0 4 4 sequence",
				"PreWarm 0 2 2 sequence",
				"Release -1 0 16",
			},
			running: []string{
				"Release 249 16 16",
				"Release 51 16 16",
				"KeepAlive 11 4 4 sequence",
				"KeepAlive 0 4 4 sequence",
				"KeepAlive 0 4 4 sequence",
				"KeepAlive 0 2 2 sequence",
				"Release -1 0 16",
			},
		},
		{
			name: "dense short gaps: kept", gaps: []int64{5, 8, 6, 12, 7, 9, 5, 11, 6, 8}, probes: []int64{2, 6, 20, 60},
			atZero:  []string{"PreWarm 2 0 1 sequence", "PreWarm 0 1 1 sequence", "Release -1 0 10", "Release -1 0 10"},
			running: []string{"KeepAlive 2 0 1 sequence", "KeepAlive 0 1 1 sequence", "Release -1 0 10", "Release -1 0 10"},
		},
		{
			// After a 20 s gap came five 600 s gaps: the gaps like 20 s
			// are kept only on the whole history's prior (0 of 5 of the
			// sequence ended there), the 600 s ones on the sequence's
			// phases.
			name: "short and long gaps alternate: the sequence says which comes next", gaps: []int64{20, 600, 20, 600, 20, 600, 20, 600, 20, 600, 20},
			probes: []int64{2, 15, 20, 30, 560, 600},
			atZero: []string{
				"Release 13 11 11",
				"PreWarm 0 0 5 sequence",
				"PreWarm 0 0 5 sequence",
				"Release 430 5 11",
				"PreWarm 0 2 5 phase",
				"PreWarm 0 1 5 phase",
			},
			running: []string{
				"KeepAlive 13 0 5 sequence",
				"KeepAlive 0 0 5 sequence",
				"KeepAlive 0 0 5 sequence",
				"Release 430 5 11",
				"KeepAlive 0 2 5 phase",
				"KeepAlive 0 1 5 phase",
			},
		},
		{
			// At a 2-minute cold-start cost no second of gaps this thinly
			// spread pays for a replica.
			name: "long gaps spread over hours: released", gaps: []int64{1913, 5437, 701, 3158, 8822, 1291, 4245, 2617}, probes: []int64{2, 600, 3000},
			atZero:  []string{"Release -1 8 8", "Release -1 8 8", "Release -1 4 8"},
			running: []string{"Release -1 8 8", "Release -1 8 8", "Release -1 4 8"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, ready := range []bool{false, true} {
				want := tt.atZero
				if ready {
					want = tt.running
				}
				var got []string
				for _, idle := range tt.probes {
					got = append(got, decideAfter(tt.gaps, tt.cost, idle, ready))
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("replica ready %v, verdicts at idle %v (-want +got):\n%s", ready, tt.probes, diff)
				}
			}
		})
	}
}

func repeat(g int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = g
	}
	return out
}

// decideAfter runs a fresh policy through gaps and returns its verdict
// idle seconds after the last request.
func decideAfter(gaps []int64, cost time.Duration, idle int64, ready bool) string {
	rev := testRevision()
	if cost > 0 {
		rev.ColdStartCost = cost
	}
	p := New(rev)
	sec := int64(0)
	p.Observe(at(sec), 1, 1)
	for _, g := range gaps {
		sec += g
		p.Observe(at(sec), 1, 1)
	}
	for s := sec + 1; s < sec+idle; s++ {
		p.Observe(at(s), 0, 0)
	}
	r := int32(0)
	if ready {
		r = 1
	}
	v, _, ok := p.Decide(at(sec+idle), r, ready, true, false)
	kind := map[Kind]string{None: "None", Fallback: "Fallback", KeepAlive: "KeepAlive", PreWarm: "PreWarm", Release: "Release"}[v.Kind]
	s := fmt.Sprintf("%s %g %g %g %s", kind, v.A, v.B, v.C, v.Detail)
	if !ok && v.Kind != Fallback && v.Kind != None {
		s += " (left to Knative)"
	}
	return strings.TrimSpace(s)
}

// fixedRanges is a Comparison that keeps fixed ranges and records the
// gaps it is given.
type fixedRanges struct {
	ranges []Range
	gaps   []int64
}

func (f *fixedRanges) Add(g int64)          { f.gaps = append(f.gaps, g) }
func (f *fixedRanges) Keep(float64) []Range { return f.ranges }

// TestUseComparison: a Comparison sees the gaps from then on and its
// ranges decide (the reasons' numbers stay the policy's history's);
// UsePredictor does not take a predictor whose code is a Comparison's,
// and UseComparison(nil) gives the policy its own back.
func TestUseComparison(t *testing.T) {
	p := New(testRevision())
	f := &fixedRanges{ranges: []Range{{Lo: 100, Hi: 120}, {Lo: 500, Hi: 501}}}
	p.UsePredictor(PredictorHybridHistogram)
	if p.predictor != &predictorTable[PredictorPhase] {
		t.Fatal("UsePredictor took a Comparison's predictor")
	}
	p.UseComparison(f)
	sec := int64(0)
	p.Observe(at(sec), 1, 1)
	for _, g := range repeat(30, 6) {
		sec += g
		p.Observe(at(sec), 1, 1)
	}
	if diff := cmp.Diff(repeat(30, 6), f.gaps); diff != "" {
		t.Errorf("gaps the Comparison saw (-want +got):\n%s", diff)
	}
	verdict := func(idle int64) Verdict {
		v, _, _ := p.Decide(at(sec+idle), 0, false, true, false)
		return v
	}
	for _, tt := range []struct {
		idle int64
		want Verdict
	}{
		{2, Verdict{Kind: Release, A: 98, B: 6, C: 6}}, // the next kept second, 100, is 98 s ahead
		{95, Verdict{Kind: PreWarm, A: 5}},
		{110, Verdict{Kind: PreWarm, A: 0}},
		{125, Verdict{Kind: Release, A: 375, C: 6}},
		{495, Verdict{Kind: PreWarm, A: 5}},
		{501, Verdict{Kind: Release, A: -1, C: 6}},
	} {
		if got := verdict(tt.idle); got != tt.want {
			t.Errorf("idle %d s: %+v, want %+v", tt.idle, got, tt.want)
		}
	}
	p.UseComparison(nil)
	if v := verdict(110); v.Kind != Release {
		t.Errorf("its own predictor back: %+v at 110 s, want a release (every gap was 30 s)", v)
	}
}
