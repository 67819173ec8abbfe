package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"ebb.dev/ebb/pkg/scaling/whatif"
)

const fixture = "../../pkg/scaling/whatif/testdata"

// smallTrace copies the fixture without its busiest function (81,149
// requests) and with the first 6 hours of the others' invocations (a day
// per setting and seed would be long under the race detector) to a
// directory of the test's.
func smallTrace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"invocations.csv", "durations.csv"} {
		b, err := os.ReadFile(filepath.Join(fixture, name))
		if err != nil {
			t.Fatal(err)
		}
		var keep []string
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "bd28ee142ca5") {
				continue
			}
			if f := strings.Split(line, ","); name == "invocations.csv" && len(f) > 3+360 {
				line = strings.Join(f[:3+360], ",")
			}
			keep = append(keep, line)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(keep, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRunSeeds: random arrivals run every setting once per seed and print
// each seed's ratios on both halves and their spread over the seeds; the
// even spread runs once.
func TestRunSeeds(t *testing.T) {
	dir := smallTrace(t)
	runOnce := func(o runOptions) string {
		t.Helper()
		var b bytes.Buffer
		if err := run(dir, o, &b); err != nil {
			t.Fatal(err)
		}
		// The first line holds the run time.
		_, rest, _ := strings.Cut(b.String(), "\n")
		return rest
	}
	o := runOptions{cold: time.Second, spread: whatif.SpreadRandom, seeds: 2, startCost: time.Second}
	random := runOnce(o)
	for _, want := range []string{"learned                  2", "seed 2    owners 8-f cold starts", "over 2 seeds, owners 0-7 cold starts",
		"both targets on both halves under every seed: ", "cost", "replica starts"} {
		if !strings.Contains(random, want) {
			t.Errorf("random arrivals: no %q in:\n%s", want, random)
		}
	}
	o.spread = whatif.SpreadEven
	even := runOnce(o)
	if !strings.Contains(even, "seed even all ") || strings.Contains(even, "seed 1 ") || strings.Contains(even, " seeds, ") ||
		!strings.Contains(even, "both targets on both halves: ") {
		t.Errorf("even arrivals: want one run, got:\n%s", even)
	}
}

// TestRunPairs: the fixed pairs run on every seed and are printed, for
// each seed, at each parked-cost beside the learned setting of that cost,
// with the verdict of each part and the count over the seeds.
func TestRunPairs(t *testing.T) {
	pairs, err := parsePairs("6s x 10m,1h")
	if err != nil || len(pairs) != 2 || pairs[1] != (pair{6 * time.Second, time.Hour}) || pairs[0].String() != "6s+10m" {
		t.Fatalf("parsePairs = %v, %v", pairs, err)
	}
	for _, bad := range []string{"6s", "6s x", "0s x 1m", "6s x 1m,x"} {
		if _, err := parsePairs(bad); err == nil {
			t.Errorf("parsePairs(%q): no error", bad)
		}
	}
	if _, err := pairRevisions([]pair{{2 * time.Minute, time.Hour}}); err == nil {
		t.Error("a pair awake longer than the stable window: no error")
	}
	var b bytes.Buffer
	o := runOptions{cold: time.Second, spread: whatif.SpreadRandom, seeds: 2, startCost: time.Second, pairs: pairs,
		only: regexp.MustCompile(`^knative$|learned parked`)}
	if err := run(smallTrace(t), o, &b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2 fixed pairs x 2 runs", "against knative, seed 1:", "against knative, seed 2:", "fixed pairs over 2 seeds: ",
		"in 0 of 18 comparisons", "parked-cost 0.05:", "parked-cost 0.20:", "  pair 6s+1h ", "  pair 6s+10m ", "learned parked .2 ",
		"    owners 8-f "} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in:\n%s", want, b.String())
		}
	}
}
