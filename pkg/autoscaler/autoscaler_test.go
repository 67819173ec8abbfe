package autoscaler

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/config/hpa"
	"ebb.dev/ebb/pkg/scaling/decider"
	"ebb.dev/ebb/pkg/scaling/scenario"
	"ebb.dev/ebb/pkg/stats"
)

var hello = RevisionKey{Namespace: "default", Name: "hello"}

// t0 is an even unix second. hello decides on odd seconds (its key's
// tickOrigin; TestTickOrigin checks it).
const t0 = int64(1_800_000_000)

// originOf is the tick origin of r's decider started at second first: the
// t = 0 of its recording.
func originOf(r *revision, first int64) int64 {
	return tickOrigin(r.hash, first, r.cfg.rev.TickInterval)
}

func TestSampleSize(t *testing.T) {
	for n, want := range map[int]int{0: 0, 1: 1, 3: 3, 5: 4, 10: 7, 100: 14, 1000: 16, 100000: 16} {
		if got := sampleSize(n); got != want {
			t.Errorf("SampleSize(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestPickSamplePrefersSettledPods(t *testing.T) {
	now := time.Unix(t0, 0)
	var pods []Pod
	for i := range 10 {
		started := now.Add(-time.Hour)
		if i%2 == 0 {
			started = now.Add(-time.Second) // young
		}
		pods = append(pods, Pod{Name: string(rune('a' + i)), Started: started})
	}
	got := pickSample(pods, now, time.Minute, 3)
	if len(got) != 7 {
		t.Fatalf("%d pods sampled, want 7", len(got))
	}
	old := 0
	for _, p := range got {
		if now.Sub(p.Started) >= time.Minute {
			old++
		}
	}
	if old != 5 {
		t.Errorf("%d settled pods in the sample, want all 5", old)
	}
}

// newTestAutoscaler returns an autoscaler whose revision "hello" is driven
// second by second by the test (no goroutine).
func newTestAutoscaler(t *testing.T, ann map[string]string, recordDir string) (*Autoscaler, *revision, *fakePlatform, *fakeScraper) {
	t.Helper()
	p := &fakePlatform{pods: map[RevisionKey][]Pod{}}
	s := &fakeScraper{}
	a := New(Options{Platform: p, Scraper: s, RecordDir: recordDir, StatsAuth: testAuth(),
		Clock: &fakeClock{now: time.Unix(t0, 0)}})
	if err := a.SetConfig(map[string]string{"stable-window": "6s", "scale-to-zero-grace-period": "4s"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Upsert(hello, ann); err != nil {
		t.Fatal(err)
	}
	return a, a.revisions[hello], p, s
}

func TestRevisionScalesOnLoad(t *testing.T) {
	_, r, p, s := newTestAutoscaler(t, map[string]string{"autoscaling.knative.dev/target": "10"}, "")
	ctx := context.Background()
	p.setPods(hello, 1)
	s.set(35, 100) // 35 in flight on the one pod: 35 / 7 = 5 pods
	for sec := t0; sec <= t0+4; sec++ {
		r.second(ctx, sec)
	}
	if got := p.scales[len(p.scales)-1]; got != 5 {
		t.Errorf("last scale %d, want 5 (scales: %v)", got, p.scales)
	}
	st := r.currentStatus()
	if st.Desired != 5 || !st.Panic || st.Ready != 1 {
		t.Errorf("status %+v: want desired 5 in panic with 1 ready", st)
	}
}

func TestActivatorReportsAndPoke(t *testing.T) {
	a, r, p, _ := newTestAutoscaler(t, nil, "")
	ctx := context.Background()
	// One idle pod: the recommendation settles at 0, and the pod goes.
	p.setPods(hello, 1)
	for sec := t0; sec <= t0+2; sec++ {
		r.second(ctx, sec)
	}
	p.setPods(hello, 0)
	if !r.atZero.Load() {
		t.Fatalf("recommendation %d, want 0", r.currentStatus().Recommended)
	}
	// A request reaches the activator at an odd second: a poke.
	rep := stats.Stat{Source: stats.SourceActivator, Revision: "default/hello", PodName: "act", AverageConcurrency: 1, RequestCount: 1}
	if err := a.Ingest(rep); err != nil {
		t.Fatal(err)
	}
	if !poked(r) {
		t.Fatal("no poke for traffic at zero")
	}
	r.second(ctx, t0+3)
	if got := r.currentStatus(); got.Recommended != 1 || got.Desired != 1 || got.Time.Unix() != t0+3 {
		t.Errorf("after the poke: %+v, want a decision at t0+3 recommending 1", got)
	}
	if p.scales[len(p.scales)-1] != 1 {
		t.Errorf("scales %v: want the last to be 1", p.scales)
	}
	r.second(ctx, t0+3) // the regular close of the same second is skipped
	if got := r.currentStatus().Time.Unix(); got != t0+3 {
		t.Errorf("latest decision at %d, want the poke's t0+3 (the regular close of that second is skipped)", got-t0)
	}
}

func TestInvalidConfigKeepsThePrevious(t *testing.T) {
	a, _, _, _ := newTestAutoscaler(t, nil, "")
	err := a.SetConfig(map[string]string{"stable-window": "3s", "max-scale-up-rate": "0.5"})
	if err == nil || !strings.Contains(err.Error(), "stable-window") || !strings.Contains(err.Error(), "max-scale-up-rate") {
		t.Fatalf("SetConfig error %v: want both problems named", err)
	}
	if a.cfg.StableWindow != 6*time.Second {
		t.Errorf("stable window %v after a rejected change, want the previous 6s", a.cfg.StableWindow)
	}
	if err := a.Upsert(hello, map[string]string{"autoscaling.knative.dev/window": "2s"}); err == nil || !strings.Contains(err.Error(),
		"previous configuration stays") {
		t.Errorf("Upsert with a bad window: %v", err)
	}
	if got := a.configs[a.revisions[hello].cfgKey].rc.annotations; len(got) != 0 {
		t.Errorf("annotations %v after a rejected change, want the previous (none)", got)
	}
}

func TestScaleFailureIsRetried(t *testing.T) {
	_, r, p, s := newTestAutoscaler(t, nil, "")
	ctx := context.Background()
	p.setPods(hello, 1)
	s.set(140, 10)
	p.failScale = true
	r.second(ctx, t0)
	p.failScale = false
	r.second(ctx, t0+1)
	r.second(ctx, t0+2)
	if len(p.scales) == 0 || p.scales[len(p.scales)-1] != r.currentStatus().Desired {
		t.Errorf("scales %v, want the desired %d applied after the failure", p.scales, r.currentStatus().Desired)
	}
}

// TestRecordingReplaysToTheSameDecisions is the contract of --record: the
// samples written while running replay through `autoscaler simulate` to the
// decisions the live autoscaler made.
func TestRecordingReplaysToTheSameDecisions(t *testing.T) {
	dir := t.TempDir()
	a, r, p, s := newTestAutoscaler(t, map[string]string{"autoscaling.knative.dev/target": "10"}, dir)
	type d struct {
		T                         int64
		Recommended, Desired, EBC int32
		Panic, Activator          bool
	}
	var want, got []d
	a.deps.onDecision = func(_ RevisionKey, x *decider.Decision, _ time.Time) {
		// The recording's t = 0 is the revision's tick origin.
		want = append(want, d{x.At.Unix() - originOf(r, t0), x.Recommended, x.Desired, x.EBC, x.Panic, x.ActivatorInPath})
	}
	ctx := context.Background()
	load := []float64{0, 0, 3, 12, 40, 40, 90, 90, 90, 30, 30, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	for i, c := range load {
		sec := t0 + int64(i)
		p.setPods(hello, min(1+i/3, 6))
		s.set(c/float64(min(1+i/3, 6)), c*3)
		s.fail = i == 8 // one failed scrape: no data that second
		if i == 20 {
			a.Ingest(stats.Stat{Source: stats.SourceActivator, Revision: "default/hello", AverageConcurrency: 0.5, RequestCount: 2})
		}
		if i == 17 {
			continue // a missed second
		}
		r.second(ctx, sec)
	}
	r.closeRecording()
	file := filepath.Join(dir, "default_hello-1.json")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	scn, err := scenario.Parse(data)
	if err != nil {
		t.Fatalf("recording does not parse: %v\n%s", err, data)
	}
	rev, err := scn.Revision(hpa.DocumentParser{})
	if err != nil {
		t.Fatal(err)
	}
	err = scenario.Replay(scn, rev, func(l scenario.Line) error {
		x := l.Decision
		got = append(got, d{l.T, x.Recommended, x.Desired, x.EBC, x.Panic, x.ActivatorInPath})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replayed decisions (-live +replay):\n%s", diff)
	}
}

func TestHistoryFoldsRepeatsAndIsBounded(t *testing.T) {
	h := newHistory(3)
	dec := func(sec int64, desired int32) *decider.Decision {
		d := decider.New(&config.Revision{}, time.Unix(sec, 0), 0).Decide(decider.Input{Now: time.Unix(sec, 0)})
		d.Desired = desired
		return &d
	}
	h.add(dec(1, 1), 1)
	h.add(dec(2, 1), 1) // same: folded
	h.add(dec(3, 2), 1)
	h.add(dec(4, 3), 1)
	h.add(dec(5, 4), 1) // evicts the first
	got := h.last(10)
	var desired []int32
	for _, v := range got {
		desired = append(desired, v.Desired)
	}
	if diff := cmp.Diff([]int32{4, 3, 2}, desired); diff != "" {
		t.Errorf("history newest first (-want +got):\n%s", diff)
	}
	h2 := newHistory(4)
	h2.add(dec(1, 1), 1)
	h2.add(dec(2, 1), 1)
	v := h2.last(1)[0]
	if v.Repeated != 1 || v.Until.Unix() != 2 || len(v.Reasons) == 0 {
		t.Errorf("folded entry %+v: want one repeat until 2, with reasons", v)
	}
}

// TestHPARecordingReplays: the HPA class scrapes every pod; its recording
// carries the per-pod samples and replays to the same decisions.
func TestHPARecordingReplays(t *testing.T) {
	dir := t.TempDir()
	a, r, p, s := newTestAutoscaler(t, map[string]string{
		"autoscaling.knative.dev/class": "hpa.autoscaling.knative.dev", "autoscaling.knative.dev/metric": "concurrency",
		"autoscaling.knative.dev/target": "10"}, dir)
	var live []int32
	a.deps.onDecision = func(_ RevisionKey, x *decider.Decision, _ time.Time) { live = append(live, x.Desired) }
	ctx := context.Background()
	for i := range 30 {
		p.setPods(hello, min(1+i/4, 5))
		s.set(float64(5+i), 10)
		s.fail = i == 11
		r.second(ctx, t0+int64(i))
	}
	r.closeRecording()
	data, err := os.ReadFile(filepath.Join(dir, "default_hello-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"pods": [{"name": "pod-0", "ready": true, "concurrency": 5, "rps": 10}]`) {
		t.Errorf("recording lacks the per-pod samples:\n%.400s", data)
	}
	scn, rev := parseRecording(t, data)
	var replayed []int32
	if err := scenario.Replay(scn, rev, func(l scenario.Line) error { replayed = append(replayed, l.Decision.Desired); return nil }); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(live, replayed); diff != "" {
		t.Errorf("desired replicas (-live +replay):\n%s", diff)
	}
	if live[len(live)-1] < 2 {
		t.Errorf("HPA desired %v: want a scale-up under load", live)
	}
}

// parseRecording reads a recording back as a scenario and the revision its
// settings make, for a replay.
func parseRecording(t *testing.T, data []byte) (*scenario.Scenario, *config.Revision) {
	t.Helper()
	scn, err := scenario.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := scn.Revision(hpa.DocumentParser{})
	if err != nil {
		t.Fatal(err)
	}
	return scn, rev
}
