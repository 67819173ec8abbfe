package autoscaler

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"ebb.dev/ebb/pkg/stats"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	p := &fakePlatform{pods: map[RevisionKey][]Pod{}}
	s := &fakeScraper{}
	a := New(Options{Platform: p, Scraper: s, Metrics: reg})
	if err := a.Upsert(hello, map[string]string{"autoscaling.knative.dev/target": "10"}); err != nil {
		t.Fatal(err)
	}
	r := a.revisions[hello]
	p.setPods(hello, 2)
	s.set(21, 30)
	for sec := t0; sec <= t0+2; sec++ {
		r.second(context.Background(), sec)
	}
	s.fail = true
	r.second(context.Background(), t0+3)

	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("metric %s: %s", p.Metric, p.Text)
	}
	want := `
# HELP ebb_autoscaler_desired_replicas The replica count the autoscaler applied (after every bound).
# TYPE ebb_autoscaler_desired_replicas gauge
ebb_autoscaler_desired_replicas{namespace="default",revision="hello"} 6
# HELP ebb_autoscaler_scrape_errors_total Seconds whose scrape of the revision's pods failed (nothing recorded from the pods).
# TYPE ebb_autoscaler_scrape_errors_total counter
ebb_autoscaler_scrape_errors_total{namespace="default",revision="hello"} 1
# HELP ebb_autoscaler_target_per_pod The per-pod target of the scaling metric, after utilization.
# TYPE ebb_autoscaler_target_per_pod gauge
ebb_autoscaler_target_per_pod{metric="concurrency",namespace="default",revision="hello"} 7
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ebb_autoscaler_desired_replicas",
		"ebb_autoscaler_scrape_errors_total", "ebb_autoscaler_target_per_pod"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(a.deps.metrics.decisions); n == 0 {
		t.Error("no decision counted by reason")
	}
	a.Delete(hello)
	if n := testutil.CollectAndCount(a.deps.metrics.desired); n != 0 {
		t.Errorf("%d desired series after the revision was deleted, want 0", n)
	}
}

func TestStatsRefusedCounted(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	a := New(Options{Platform: &fakePlatform{pods: map[RevisionKey][]Pod{}}, Scraper: &fakeScraper{}, Metrics: reg, StatsAuth: testAuth()})
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	for _, tok := range []string{"", "forged", tokenApp} {
		postStats(t, srv.URL, tok, stats.BatchContentType, nil).Body.Close()
	}
	want := `
# HELP ebb_autoscaler_stats_refused_total POST /v1/stats refused before anything changed, by HTTP status (401, 403, 415, 421, 429, 503).
# TYPE ebb_autoscaler_stats_refused_total counter
ebb_autoscaler_stats_refused_total{code="401"} 2
ebb_autoscaler_stats_refused_total{code="403"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ebb_autoscaler_stats_refused_total"); err != nil {
		t.Error(err)
	}
}
