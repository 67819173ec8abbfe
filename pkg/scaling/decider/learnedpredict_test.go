package decider

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"ebb.dev/ebb/internal/golden"
	"ebb.dev/ebb/pkg/config"
)

// The predictors on hand-written sequences of idle gaps
// (testdata/predictor/*.gaps): each file lists gaps in seconds, one
// "COUNT × GAP GAP ..." or "GAP ..." per line ('#' starts a comment), and
// a revision invoked for one second after each gap (the first request at
// second 0 of a minute) runs through a Stepper with each predictor,
// replicas ready in the second after they are asked for, so that the
// learned pre-warm lead is 2s (a 1s tick and that start-up). The golden
// file (NAME.golden) holds, per predictor, the requests that found no
// replica and the idle replica-seconds, and the policy's decisions around
// the last two requests, with their sentences. The predictors whose code
// is a Comparison's (the hybrid histogram) are pkg/scaling/whatif/compare's to
// test.

func TestPredictorGoldens(t *testing.T) {
	files, err := filepath.Glob("testdata/predictor/*.gaps")
	if err != nil || len(files) == 0 {
		t.Fatalf("no gap sequences: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".gaps")
		t.Run(name, func(t *testing.T) {
			gaps, err := readGaps(f)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%d gaps, cold-start-cost 2m, prewarm-lead auto (2s)\n\n%-18s %6s %8s\n", len(gaps), "predictor", "cold", "idle-s")
			var last []string
			for _, p := range Predictors() {
				if p.Comparison() {
					continue // pkg/scaling/whatif/compare's
				}
				run := runGaps(p, gaps)
				fmt.Fprintf(&b, "%-18s %6d %8d\n", p, run.cold, run.idle)
				if p == PredictorPhase {
					last = run.last
				}
			}
			fmt.Fprintf(&b, "\nthe policy (%s), around the last two requests:\n%s", PredictorPhase, strings.Join(last, ""))
			golden.Check(t, strings.TrimSuffix(f, ".gaps")+".golden", []byte(b.String()))
		})
	}
	// What the policy reads must pay: the order of gaps (alternating,
	// drifting) and the second of the minute (daily: every request at
	// second 0) give fewer cold starts than the whole-history histogram at
	// no more idle time, or less idle time at no more cold starts; on
	// daily it is ahead of the sequence predictor too, and on a timer
	// whose gaps are all alike (exact-period) it may spend a little more
	// than the histogram (the bins a minute before the period borrow a
	// little hazard from it, worth a pre-warm at the timer's second), at
	// most 10%.
	ahead := func(name string, p, q Predictor) {
		gaps, err := readGaps("testdata/predictor/" + name + ".gaps")
		if err != nil {
			t.Fatal(err)
		}
		a, b := runGaps(p, gaps), runGaps(q, gaps)
		if !(a.cold <= b.cold && a.idle <= b.idle && (a.cold < b.cold || a.idle < b.idle)) {
			t.Errorf("%s: %s %d cold, %d idle-s; %s %d, %d: want %s ahead", name, p, a.cold, a.idle, q, b.cold, b.idle, p)
		}
	}
	for _, name := range []string{"alternating", "drifting", "daily"} {
		ahead(name, PredictorPhase, predictorHistogram)
	}
	ahead("daily", PredictorPhase, PredictorSequence)
	gaps, err := readGaps("testdata/predictor/exact-period.gaps")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := runGaps(PredictorPhase, gaps), runGaps(predictorHistogram, gaps); a.cold > b.cold || float64(a.idle) > 1.1*float64(b.idle) {
		t.Errorf("exact-period: %d cold, %d idle-s; the histogram %d, %d: want at most its cold starts and 10%% more idle time",
			a.cold, a.idle, b.cold, b.idle)
	}
}

// readGaps reads a .gaps file.
func readGaps(path string) ([]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var gaps []int64
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		count, rest := 1, text
		if c, r, ok := strings.Cut(text, "×"); ok {
			if count, err = strconv.Atoi(strings.TrimSpace(c)); err != nil {
				return nil, fmt.Errorf("%s:%d: count %q: %w", path, line, c, err)
			}
			rest = r
		}
		var one []int64
		for _, w := range strings.Fields(rest) {
			g, err := strconv.ParseInt(w, 10, 64)
			if err != nil || g < 2 {
				return nil, fmt.Errorf("%s:%d: gap %q: want whole seconds, at least 2", path, line, w)
			}
			one = append(one, g)
		}
		for range count {
			gaps = append(gaps, one...)
		}
	}
	return gaps, sc.Err()
}

type gapsRun struct {
	cold, idle int64
	last       []string // decisions around the last two requests
}

// runGaps drives a learned revision with a one-second request after each
// gap (the first at second 0), replicas ready as soon as asked.
func runGaps(p Predictor, gaps []int64) gapsRun {
	rev := learnedRevision()
	rev.TickInterval, rev.PrewarmLead = time.Second, config.PrewarmLeadAuto
	st := NewStepper(rev, StepperOptions{First: at(0), Ready: 0})
	st.Decider().UsePredictor(p)
	arrivals := map[int64]bool{0: true}
	end := int64(0)
	for _, g := range gaps {
		end += g
		arrivals[end] = true
	}
	var run gapsRun
	secondLast := end - gaps[len(gaps)-1]
	ready, dec := int32(0), &Decision{}
	for s := int64(0); s <= end; s++ {
		load := arrivals[s]
		switch {
		case load && ready == 0:
			run.cold++
			ready = 1 // the activator's poke brings one at once
		case !load && ready > 0:
			run.idle += int64(ready)
		}
		conc := 0.0
		if load {
			conc = 1
		}
		r := ready
		if !st.StepInto(at(s), Second{HasMetric: ready > 0 || load, Concurrency: conc, RPS: conc, Ready: &r}, dec) {
			continue
		}
		if dec.Desired != ready && s >= secondLast-15 {
			run.last = append(run.last, fmt.Sprintf("  second %d (%s): %d -> %d: %s\n", s, relative(s, secondLast, end), ready, dec.Desired, learnedReasons(dec)))
		}
		ready = dec.Desired
	}
	return run
}

// relative names second s against the last two requests.
func relative(s, prev, last int64) string {
	switch {
	case s < prev:
		return fmt.Sprintf("%ds before the one but last request", prev-s)
	case s < last:
		return fmt.Sprintf("%ds after the one but last request", s-prev)
	}
	return "the last request"
}

func learnedReasons(dec *Decision) string {
	var out []string
	for _, r := range dec.Reasons() {
		switch r.Code {
		case PreWarm, KeepAlive, LearnedRelease, LearnedFallback:
			out = append(out, string(r.Code)+": "+r.Message())
		}
	}
	if len(out) == 0 {
		return "Knative's rules"
	}
	return strings.Join(out, "; ")
}

// TestPredictorNames: every predictor has a name that parses back.
func TestPredictorNames(t *testing.T) {
	for _, p := range Predictors() {
		if got, err := ParsePredictor(p.String()); err != nil || got != p {
			t.Errorf("ParsePredictor(%q) = %v, %v", p, got, err)
		}
	}
	if _, err := ParsePredictor("oracle"); err == nil || !strings.Contains(err.Error(), "sequence") {
		t.Errorf("an unknown predictor: %v, want an error naming the known ones", err)
	}
	if Predictors()[0] != PredictorPhase || learnedRevision().ScaleToZeroPolicy != config.ScaleToZeroLearned {
		t.Error("the policy's own predictor is not first")
	}
}
