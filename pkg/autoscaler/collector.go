package autoscaler

import (
	"context"
	"errors"
	"math"
	"sort"
	"sync"
	"time"

	"ebb.dev/ebb/pkg/scaling/decider"
)

// maxSampleSize is the largest number of pods scraped per second.
const maxSampleSize = 16

// sampleSize is how many of n ready pods are scraped each second: all of
// them up to 3, then enough for a 95% confidence at a ±5 margin assuming a
// variance of 100 (Knative's pkg/autoscaler/metrics/sample_size.go):
// 5 -> 4, 10 -> 7, 100 -> 14, 1000 -> 16, never more than 16.
func sampleSize(n int) int {
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
	k := sampleSize(len(pods))
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

// scrapeAll scrapes the pods within the context's deadline and returns
// their revision-wide totals, scaled from the sample to all ready pods,
// minus what came through the activator (the activator reports it
// itself). Any failure fails the whole second, as in Knative.
func scrapeAll(ctx context.Context, s Scraper, sample []Pod, ready int, sc *scratch) (conc, rps float64, err error) {
	scrapeInto(ctx, s, sample, sc)
	if err := errors.Join(sc.errs...); err != nil {
		return 0, 0, errors.Join(errIncompleteScrape, err)
	}
	conc, rps = decider.PodTotals(sc.stats, ready)
	return conc, rps, nil
}

// sequentialScrapes is the largest sample scraped one pod after the other:
// a few keep-alive requests take milliseconds, less than starting
// goroutines for them at 10,000 revisions; larger samples go in parallel.
const sequentialScrapes = 3

// scrapeInto scrapes the pods into sc.stats and sc.errs: in turn up to
// sequentialScrapes, else in parallel.
func scrapeInto(ctx context.Context, s Scraper, pods []Pod, sc *scratch) {
	sc.stats, sc.errs = grow(sc.stats, len(pods)), grow(sc.errs, len(pods))
	if len(pods) <= sequentialScrapes {
		for i, p := range pods {
			sc.stats[i], sc.errs[i] = s.Scrape(ctx, p)
		}
		return
	}
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Go(func() { sc.stats[i], sc.errs[i] = s.Scrape(ctx, p) })
	}
	wg.Wait()
}

// scrapePods scrapes every pod and leaves one sample per pod in
// sc.samples: its whole load, activator traffic included, since that is
// load on the pod; nil values for a pod that did not answer. It returns
// the pods' totals without what came through the activator (which reports
// that itself). The error joins the failures.
func scrapePods(ctx context.Context, s Scraper, pods []Pod, sc *scratch) (direct [2]float64, _ error) {
	n := len(pods)
	sc.samples, sc.values = grow(sc.samples, n), grow(sc.values, n)
	scrapeInto(ctx, s, pods, sc)
	for i := range n {
		p := &sc.samples[i]
		*p = decider.PodSample{Name: pods[i].Name, Ready: true}
		if sc.errs[i] != nil {
			continue
		}
		st, v := &sc.stats[i], &sc.values[i] // the values outlive the step, which reads them
		*v = [2]float64{st.AverageConcurrency, st.RequestRate()}
		p.Concurrency, p.RPS = &v[0], &v[1]
		direct[0] += st.AverageConcurrency - st.AverageProxiedConcurrency
		direct[1] += st.RequestRate() - st.ProxiedRequestRate()
	}
	return direct, errors.Join(sc.errs...)
}
