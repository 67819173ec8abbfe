package autoscaler

import (
	"context"
	"errors"
	"math"
	"sort"
	"sync"
	"time"

	"ebb.dev/ebb/pkg/decider"
	"ebb.dev/ebb/pkg/stats"
)

// maxSampleSize is the largest number of pods scraped per second.
const maxSampleSize = 16

// SampleSize is how many of n ready pods are scraped each second: all of
// them up to 3, then enough for a 95% confidence at a ±5 margin assuming a
// variance of 100 (Knative's pkg/autoscaler/metrics/sample_size.go):
// 5 -> 4, 10 -> 7, 100 -> 14, 1000 -> 16, never more than 16.
func SampleSize(n int) int {
	if n <= 3 {
		return max(n, 0)
	}
	s := int(math.Ceil(float64(n) * 15.3664 / (float64(n) + 14.3664)))
	return min(s, maxSampleSize, n)
}

// pickSample chooses which pods to scrape: pods started at least a stable
// window ago first (their load is settled), younger ones only to fill the
// sample. Within each group the choice rotates with seed so that, over
// time, every pod is scraped.
func pickSample(pods []Pod, now time.Time, stableWindow time.Duration, seed int) []Pod {
	k := SampleSize(len(pods))
	if k == len(pods) {
		return pods
	}
	sorted := append([]Pod(nil), pods...)
	sort.SliceStable(sorted, func(i, j int) bool {
		oi := now.Sub(sorted[i].Started) >= stableWindow
		oj := now.Sub(sorted[j].Started) >= stableWindow
		return oi && !oj
	})
	old := 0
	for old < len(sorted) && now.Sub(sorted[old].Started) >= stableWindow {
		old++
	}
	if old >= k {
		return rotate(sorted[:old], seed)[:k]
	}
	young := rotate(sorted[old:], seed)
	return append(sorted[:old:old], young[:k-old]...)
}

func rotate(pods []Pod, seed int) []Pod {
	if len(pods) == 0 {
		return pods
	}
	s := seed % len(pods)
	return append(append([]Pod(nil), pods[s:]...), pods[:s]...)
}

// errIncompleteScrape means fewer pods answered than the sample needs;
// nothing is recorded from the pods for that second.
var errIncompleteScrape = errors.New("incomplete scrape")

// scrapeAll scrapes the pods in parallel within the context's deadline and
// returns their revision-wide totals, scaled from the sample to all ready
// pods, minus what came through the activator (the activator reports it
// itself). Any failure fails the whole second, as in Knative.
func scrapeAll(ctx context.Context, s Scraper, sample []Pod, ready int) (conc, rps float64, err error) {
	results := make([]stats.Stat, len(sample))
	errs := make([]error, len(sample))
	if len(sample) <= sequentialScrapes {
		for i, p := range sample {
			results[i], errs[i] = s.Scrape(ctx, p)
		}
	} else {
		var wg sync.WaitGroup
		for i, p := range sample {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = s.Scrape(ctx, p)
			}()
		}
		wg.Wait()
	}
	if err := errors.Join(errs...); err != nil {
		return 0, 0, errors.Join(errIncompleteScrape, err)
	}
	for _, st := range results {
		conc += st.AverageConcurrency - st.AverageProxiedConcurrency
		rps += st.RequestRate() - st.ProxiedRequestRate()
	}
	scale := float64(ready) / float64(len(sample))
	return conc * scale, rps * scale, nil
}

// sequentialScrapes is the largest sample scraped one pod after the other:
// a few keep-alive requests take milliseconds, less than starting
// goroutines for them at 10,000 revisions; larger samples go in parallel.
const sequentialScrapes = 3

// activatorTotals sums activator reports for one second: their concurrency
// and request rate are the revision's traffic through the activator.
func activatorTotals(reports []stats.Stat) (conc, rps float64) {
	for _, st := range reports {
		conc += st.AverageConcurrency
		rps += st.RequestRate()
	}
	return conc, rps
}

// secondOf combines the parts of one second into the decider's input.
func secondOf(ready int32, scraped bool, podConc, podRPS float64, reports []stats.Stat) decider.Second {
	actConc, actRPS := activatorTotals(reports)
	sec := decider.Second{Ready: &ready}
	if scraped || len(reports) > 0 {
		sec.HasMetric = true
		sec.Concurrency = podConc + actConc
		sec.RPS = podRPS + actRPS
	}
	return sec
}
