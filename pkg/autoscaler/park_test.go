package autoscaler

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// parkPlatform parks (or refuses to) and records what it was asked.
type parkPlatform struct {
	*fakePlatform
	parks  []bool // the parks and wakes that changed something
	asked  int    // every call
	parked bool
	refuse bool
}

func (p *parkPlatform) Park(_ context.Context, _ RevisionKey, req ParkRequest) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked++
	if !req.Parked && !p.parked {
		return nil // nothing parked: nothing to wake
	}
	p.parks = append(p.parks, req.Parked)
	if req.Parked && (req.CPURequestMilli != 1 || req.MemoryRequestBytes != 16<<20) {
		return fmt.Errorf("parked requests %+v, want the defaults 1m and 16Mi", req)
	}
	if p.refuse && req.Parked {
		return fmt.Errorf("resizing pod hello-1: %w: its container needs a restart to resize", ErrParkRefused)
	}
	p.parked = req.Parked
	return nil
}

func (p *parkPlatform) ParkStatus(RevisionKey) (ParkStatus, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refuse {
		return ParkStatus{State: ParkStateRefused, Reason: "ResizeRefused", Message: "its container needs a restart to resize"}, true
	}
	return ParkStatus{}, false
}

func newParkingAutoscaler(t *testing.T, refuse bool) (*Autoscaler, *revision, *parkPlatform, *fakeScraper, *prometheus.Registry) {
	t.Helper()
	p := &parkPlatform{fakePlatform: &fakePlatform{pods: map[RevisionKey][]Pod{}}, refuse: refuse}
	a, r, s, reg := newParkingAutoscalerOn(t, p)
	return a, r, p, s, reg
}

// newParkingAutoscalerOn is newParkingAutoscaler on the platform p.
func newParkingAutoscalerOn(t *testing.T, p Platform) (*Autoscaler, *revision, *fakeScraper, *prometheus.Registry) {
	t.Helper()
	s := &fakeScraper{}
	reg := prometheus.NewRegistry()
	a := New(Options{Platform: p, Scraper: s, StatsAuth: testAuth(), Clock: &fakeClock{now: time.Unix(t0, 0)}, Metrics: reg})
	if err := a.SetConfig(map[string]string{"stable-window": "6s", "scale-to-zero-grace-period": "4s", "enable-parking": "true"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Upsert(hello, nil); err != nil {
		t.Fatal(err)
	}
	return a, a.revisions[hello], s, reg
}

// refinePlatform is a parkPlatform whose park is left incomplete for a
// number of retries (ParkRefiner).
type refinePlatform struct {
	*parkPlatform
	incomplete int // ParkIncomplete says true this many times while parked
}

func (p *refinePlatform) ParkIncomplete(RevisionKey) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.incomplete > 0 && p.parked {
		p.incomplete--
		return true
	}
	return false
}

// TestParkRefined: while a revision stays parked, a platform whose park
// is incomplete is asked to park again (with the parked requests) each
// time it says a retry is due, and no more.
func TestParkRefined(t *testing.T) {
	p := &refinePlatform{parkPlatform: &parkPlatform{fakePlatform: &fakePlatform{pods: map[RevisionKey][]Pod{}}}, incomplete: 2}
	_, r, _, _ := newParkingAutoscalerOn(t, p)
	ctx := context.Background()
	p.setPods(hello, 1)
	for sec := t0; sec <= t0+60; sec++ {
		r.second(ctx, sec)
	}
	if !slices.Equal(p.parks, []bool{true, true, true}) {
		t.Fatalf("parks %v; want a park and two retries of it", p.parks)
	}
	if st := r.currentStatus(); st.State != stateParked || st.Desired != 1 {
		t.Errorf("status %+v; want parked at 1", st.DecisionView)
	}
}

// TestParkAndWake: an idle revision with parking is parked (one replica,
// the platform asked to park it, the status says parked); load wakes it
// before it scales out, and the wake is counted.
func TestParkAndWake(t *testing.T) {
	_, r, p, s, reg := newParkingAutoscaler(t, false)
	ctx := context.Background()
	p.setPods(hello, 1)
	sec := t0
	for ; sec <= t0+30 && len(p.parks) == 0; sec++ {
		r.second(ctx, sec)
	}
	if !slices.Equal(p.parks, []bool{true}) {
		t.Fatalf("parks %v by t0+%d; want one park", p.parks, sec-t0)
	}
	st := r.currentStatus()
	if st.State != stateParked || !st.Parked || st.Desired != 1 || !st.ActivatorInPath {
		t.Fatalf("status %+v; want parked, desired 1, activator in the path", st.DecisionView)
	}
	if slices.Contains(p.scales, 0) {
		t.Fatalf("scales %v: a parked revision is never scaled to zero", p.scales)
	}
	s.set(350, 350) // 350 in flight: 5 pods at the default target of 70, woken first
	for end := sec + 4; sec <= end; sec++ {
		r.second(ctx, sec)
	}
	if !slices.Equal(p.parks, []bool{true, false}) {
		t.Fatalf("parks %v; want a park then a wake", p.parks)
	}
	if p.asked != 3 {
		t.Errorf("%d calls to Park; want 3: a wake of what an earlier process may have parked (at the first decision), a park, a wake", p.asked)
	}
	if last := p.scales[len(p.scales)-1]; last < 2 {
		t.Errorf("scales %v; want a scale out after the wake", p.scales)
	}
	if st := r.currentStatus(); st.Parked || st.State == stateParked {
		t.Errorf("after the wake: %+v", st.DecisionView)
	}
	if n := testutil.ToFloat64(r.deps.metrics.wakes.WithLabelValues(wakeFromParked)); n != 1 {
		t.Errorf("wakes from parked %v, want 1", n)
	}
	if n := testutil.CollectAndCount(reg, metricPrefix+"wake_duration_seconds"); n != 2 {
		t.Errorf("%d wake-duration series, want 2 (parked, zero)", n)
	}
}

// TestParkRefusedGoesToZero: where the platform refuses to park, the
// revision goes to zero at the next decision (never stuck at one parked
// replica), the status says why, and it is not asked again; a request
// then wakes it from zero, counted as such.
func TestParkRefusedGoesToZero(t *testing.T) {
	a, r, p, _, _ := newParkingAutoscaler(t, true)
	ctx := context.Background()
	p.setPods(hello, 1)
	sec := t0
	for ; sec <= t0+40 && !slices.Contains(p.scales, 0); sec++ {
		r.second(ctx, sec)
	}
	if !slices.Contains(p.scales, 0) {
		t.Fatalf("scales %v, parks %v: never went to zero after the refusal", p.scales, p.parks)
	}
	if !slices.Equal(p.parks, []bool{true}) {
		t.Errorf("parks %v; want one refused try", p.parks)
	}
	st := r.currentStatus()
	if st.Parking == nil || st.Parking.State != ParkStateRefused || st.Desired != 0 || st.Parked {
		t.Errorf("status %+v, parking %+v; want desired 0 with parking refused", st.DecisionView, st.Parking)
	}
	p.setPods(hello, 0)
	for end := sec + 20; sec <= end; sec++ {
		r.second(ctx, sec)
	}
	if !slices.Equal(p.parks, []bool{true}) {
		t.Errorf("parks %v; want no second try", p.parks)
	}
	if err := a.Ingest(activatorReport(sec-1, 1)); err != nil { // a request at the activator
		t.Fatal(err)
	}
	r.second(ctx, sec)
	if last := p.scales[len(p.scales)-1]; last != 1 {
		t.Fatalf("scales %v; want 1 after the request", p.scales)
	}
	p.setPods(hello, 1) // its pod is ready a few seconds later
	for end := sec + 3; sec <= end; sec++ {
		r.second(ctx, sec)
	}
	if n := testutil.ToFloat64(r.deps.metrics.wakes.WithLabelValues(wakeFromZero)); n != 1 {
		t.Errorf("wakes from zero %v, want 1", n)
	}
}

// costPlatform records the loads it is given before each scale.
type costPlatform struct {
	*fakePlatform
	loads  [][]PodLoad
	scaled []int // len(loads) at each scale
}

func (p *costPlatform) SetDeletionCosts(_ context.Context, _ RevisionKey, loads []PodLoad) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.loads = append(p.loads, append([]PodLoad(nil), loads...))
	return nil
}

func (p *costPlatform) Scale(ctx context.Context, rev RevisionKey, n int32) error {
	p.mu.Lock()
	p.scaled = append(p.scaled, len(p.loads))
	p.mu.Unlock()
	return p.fakePlatform.Scale(ctx, rev, n)
}

// TestScaleDownSetsDeletionCosts: before a scale-down is written, every
// ready pod's load goes to the platform; a scale-up reads none.
func TestScaleDownSetsDeletionCosts(t *testing.T) {
	p := &costPlatform{fakePlatform: &fakePlatform{pods: map[RevisionKey][]Pod{}}}
	s := &fakeScraper{}
	a := New(Options{Platform: p, Scraper: s, StatsAuth: testAuth(), Clock: &fakeClock{now: time.Unix(t0, 0)}})
	if err := a.SetConfig(map[string]string{"stable-window": "6s", "scale-to-zero-grace-period": "4s"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Upsert(hello, map[string]string{"autoscaling.knative.dev/target": "10"}); err != nil {
		t.Fatal(err)
	}
	r := a.revisions[hello]
	ctx := context.Background()
	p.setPods(hello, 4)
	s.set(20, 20) // 80 in flight over 4 pods: 12 pods at a target of 7
	sec := t0
	for ; sec <= t0+3; sec++ {
		r.second(ctx, sec)
	}
	if len(p.loads) != 0 {
		t.Fatalf("loads read before a scale-up: %v", p.loads)
	}
	s.set(1, 1)
	for end := sec + 40; sec <= end && len(p.loads) == 0; sec++ {
		r.second(ctx, sec)
	}
	if len(p.loads) == 0 {
		t.Fatalf("no loads before the scale-down (scales %v)", p.scales)
	}
	if l := p.loads[0]; len(l) != 4 || !l[0].Known || l[0].InFlight != 1 {
		t.Errorf("loads %+v; want the 4 pods at 1 in flight", l)
	}
	if last := p.scaled[len(p.scaled)-1]; last != len(p.loads) {
		t.Errorf("the scale-down was written before its loads were set (%v)", p.scaled)
	}
}
