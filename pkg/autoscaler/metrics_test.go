package autoscaler

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"ebb.dev/ebb/pkg/proxy/reqmetrics"
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
		if !reqmetrics.IsKnative(p.Metric) {
			t.Errorf("metric %s: %s", p.Metric, p.Text)
		}
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
	if n, err := testutil.GatherAndCount(reg, "ebb_autoscaler_decisions_total"); err != nil || n == 0 {
		t.Errorf("no decision counted by reason (%v)", err)
	}
	a.Delete(hello)
	if n, err := testutil.GatherAndCount(reg, "ebb_autoscaler_desired_replicas"); err != nil || n != 0 {
		t.Errorf("%d desired series after the revision was deleted, want 0 (%v)", n, err)
	}
}

// TestRestingRevisionExportsNoSeries: a revision at rest drops out of the
// per-revision series and counts among the resting ones; awake, it is back
// with its counts.
func TestRestingRevisionExportsNoSeries(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	p := &countingPlatform{fakePlatform: &fakePlatform{pods: map[RevisionKey][]Pod{}}, reads: map[RevisionKey]int{}}
	s := &fakeScraper{}
	a := New(Options{Platform: p, Scraper: s, Metrics: reg, StatsAuth: testAuth(), Clock: &fakeClock{now: time.Unix(t0, 0)}})
	if err := a.SetConfig(map[string]string{"stable-window": "6s", "scale-to-zero-grace-period": "4s"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Upsert(hello, nil); err != nil {
		t.Fatal(err)
	}
	count := func(name string) int {
		n, err := testutil.GatherAndCount(reg, name)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	rested := toRest(t, a, p, s, 0)
	if got := testutil.ToFloat64(a.deps.metrics.resting); count("ebb_autoscaler_desired_replicas") != 0 || got != 1 {
		t.Errorf("at rest: %d desired series, %v resting: want none and 1", count("ebb_autoscaler_desired_replicas"), got)
	}
	if err := a.Ingest(load(hello.String(), 1, 0)); err != nil {
		t.Fatal(err)
	}
	drain(a)
	stepTo(a, at(rested+time.Second))
	want := `
# HELP ebb_autoscaler_desired_replicas The replica count the autoscaler applied (after every bound).
# TYPE ebb_autoscaler_desired_replicas gauge
ebb_autoscaler_desired_replicas{namespace="default",revision="hello"} 1
# HELP ebb_autoscaler_resting_revisions Revisions at zero without traffic that rest (not stepped every second; no per-revision series).
# TYPE ebb_autoscaler_resting_revisions gauge
ebb_autoscaler_resting_revisions 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ebb_autoscaler_desired_replicas", "ebb_autoscaler_resting_revisions"); err != nil {
		t.Errorf("awake again: %v", err)
	}
	if count("ebb_autoscaler_decisions_total") < 3 {
		t.Errorf("decision counts lost at rest")
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

// TestKnativeMetrics: Knative's autoscaler series, under Knative's names
// and labels, beside Ebb's; the revision's labels name its Configuration
// and Service, and without them it is its own configuration, owned by
// no Service ("unknown").
func TestKnativeMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	p := &fakePlatform{pods: map[RevisionKey][]Pod{}}
	s := &fakeScraper{}
	a := New(Options{Platform: p, Scraper: s, Metrics: reg})
	rps := RevisionKey{Namespace: "default", Name: "web-00002"}
	if err := a.Upsert(hello, map[string]string{"autoscaling.knative.dev/target": "10"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Upsert(rps, map[string]string{"autoscaling.knative.dev/metric": "rps", "autoscaling.knative.dev/target": "20"}); err != nil {
		t.Fatal(err)
	}
	a.SetLabels(rps, map[string]string{"serving.knative.dev/service": "web", "serving.knative.dev/configuration": "web"})
	a.SetLabels(RevisionKey{Namespace: "default", Name: "absent"}, map[string]string{"serving.knative.dev/service": "x"}) // ignored
	p.setPods(hello, 2)
	p.setPods(rps, 1)
	s.set(21, 30)
	for sec := t0; sec <= t0+2; sec++ {
		a.revisions[hello].second(context.Background(), sec)
		a.revisions[rps].second(context.Background(), sec)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if !reqmetrics.IsKnative(p.Metric) {
			t.Errorf("metric %s: %s", p.Metric, p.Text)
		}
	}
	const helloLabels = `configuration_name="hello",namespace_name="default",revision_name="hello",service_name="unknown"`
	const webLabels = `configuration_name="web",namespace_name="default",revision_name="web-00002",service_name="web"`
	want := `
# HELP autoscaler_actual_pods Number of ready pods at the last decision.
# TYPE autoscaler_actual_pods gauge
autoscaler_actual_pods{` + helloLabels + `} 2
autoscaler_actual_pods{` + webLabels + `} 1
# HELP autoscaler_desired_pods Number of pods the autoscaler wants (Knative's desired_pods; Ebb's desired replicas).
# TYPE autoscaler_desired_pods gauge
autoscaler_desired_pods{` + helloLabels + `} 6
autoscaler_desired_pods{` + webLabels + `} 3
# HELP autoscaler_panic_mode 1 if the autoscaler is in panic mode, 0 otherwise.
# TYPE autoscaler_panic_mode gauge
autoscaler_panic_mode{` + helloLabels + `} 1
autoscaler_panic_mode{` + webLabels + `} 1
# HELP autoscaler_target_concurrency_per_pod The target of requests in flight for each pod.
# TYPE autoscaler_target_concurrency_per_pod gauge
autoscaler_target_concurrency_per_pod{` + helloLabels + `} 7
# HELP autoscaler_target_requests_per_second The target of requests per second for each pod.
# TYPE autoscaler_target_requests_per_second gauge
autoscaler_target_requests_per_second{` + webLabels + `} 14
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "autoscaler_actual_pods", "autoscaler_desired_pods",
		"autoscaler_panic_mode", "autoscaler_target_concurrency_per_pod", "autoscaler_target_requests_per_second"); err != nil {
		t.Error(err)
	}
	for name, n := range map[string]int{"autoscaler_stable_request_concurrency": 1, "autoscaler_panic_request_concurrency": 1,
		"autoscaler_stable_requests_per_second": 1, "autoscaler_panic_requests_per_second": 1,
		"autoscaler_requested_pods": 2, "autoscaler_excess_burst_capacity": 2} {
		if got, err := testutil.GatherAndCount(reg, name); err != nil || got != n {
			t.Errorf("%s: %d series, want %d (%v)", name, got, n, err)
		}
	}
}
