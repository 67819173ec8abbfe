package autoscaler

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"ebb.dev/ebb/pkg/podfailure"
)

// crashLoopPlatform is a fakePlatform whose revision hello keeps failing
// after start while failing is set (the platform's StartFailureReporter).
type crashLoopPlatform struct {
	*fakePlatform
	failing atomic.Bool
}

func (p *crashLoopPlatform) Failure(key RevisionKey) (podfailure.Failure, bool) {
	if key != hello || !p.failing.Load() {
		return podfailure.Failure{}, false
	}
	return podfailure.Failure{Reason: podfailure.ReasonContainerCrashedAfterStart, Cause: "CrashLoopBackOff", Container: "app",
		Message: "crashed after it started serving"}, true
}

// TestCrashLoopStateIsSteady: a revision at min-scale 1 under load whose
// only replica crashes again and again, ready for a second between two
// crashes: while the platform says its pods keep failing, its state stays
// activating and the activator stays in its path (before, every ready
// second made it active, and the next crash activating again). Once the
// platform says it recovered, the ready replica makes it active.
func TestCrashLoopStateIsSteady(t *testing.T) {
	ctx := context.Background()
	p := &crashLoopPlatform{fakePlatform: &fakePlatform{pods: map[RevisionKey][]Pod{}}}
	s := &fakeScraper{}
	a := New(Options{Platform: p, Scraper: s, StatsAuth: testAuth(), Clock: &fakeClock{now: time.Unix(t0, 0)}})
	if err := a.Upsert(hello, map[string]string{"autoscaling.knative.dev/min-scale": "1"}); err != nil {
		t.Fatal(err)
	}
	r := a.revisions[hello]
	s.set(20, 20)
	p.setPods(hello, 1)
	sec := t0
	for ; sec < t0+10; sec++ { // serving: active
		r.second(ctx, sec)
	}
	if st := r.currentStatus(); st.State != "active" {
		t.Fatalf("serving: state %q, want active", st.State)
	}
	p.failing.Store(true)
	states := map[string]int{}
	inPath := 0
	for i := 0; i < 40; i, sec = i+1, sec+1 { // a crash loop: ready one second in four
		p.setPods(hello, map[bool]int{true: 1, false: 0}[i%4 == 3])
		r.second(ctx, sec)
		st := r.currentStatus()
		if i >= 2 { // the state's first move
			states[string(st.State)]++
			if st.ActivatorInPath {
				inPath++
			}
		}
	}
	if len(states) != 1 || states["activating"] == 0 {
		t.Errorf("states in the crash loop %v, want activating throughout", states)
	}
	if inPath != 38 {
		t.Errorf("the activator in the path %d of 38 seconds, want all", inPath)
	}
	p.failing.Store(false)
	p.setPods(hello, 1)
	for end := sec + 3; sec < end; sec++ {
		r.second(ctx, sec)
	}
	if st := r.currentStatus(); st.State != "active" {
		t.Errorf("recovered: state %q, want active", st.State)
	}
}
