package autoscaler

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"ebb.dev/ebb/pkg/podfailure"
)

// BenchmarkEachSummaryAtRest: the RevisionAutoscaler writer's pass over
// the revisions each second (EachSummary) with 100,000 revisions at rest
// and 100 awake: its cost is of the awake ones.
func BenchmarkEachSummaryAtRest(b *testing.B) {
	restingOnce.Do(func() { restingFleet = restingRevisions(b) })
	a := restingFleet
	if n := a.deps.schedule.ticks(); n > 200 {
		b.Fatalf("%d revisions awake, want the 100 busy ones", n)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		n := 0
		a.EachSummary(func(Summary) { n++ })
		if n == 0 {
			b.Fatal("no summary")
		}
	}
}

// restingFleet is built once for every run of the benchmark (b.N grows).
var (
	restingOnce  sync.Once
	restingFleet *Autoscaler
)

func restingRevisions(b *testing.B) *Autoscaler {
	a, p, _ := newScheduled(&testing.T{}, map[string]string{"initial-scale": "0", "allow-zero-initial-scale": "true"})
	for i := range 100_000 {
		if err := a.Upsert(RevisionKey{Namespace: "ns", Name: fmt.Sprint("rest-", i)}, nil); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 100 {
		key := RevisionKey{Namespace: "ns", Name: fmt.Sprint("busy-", i)}
		p.setPods(key, 1)
		if err := a.Upsert(key, nil); err != nil {
			b.Fatal(err)
		}
	}
	for now := time.Duration(0); now <= 10*time.Second; now += time.Second {
		stepTo(a, at(now))
	}
	return a
}

// TestEachSummarySkipsResting: a revision at rest is not visited (its
// latest decision stands); once a change wakes it, it is again.
func TestEachSummarySkipsResting(t *testing.T) {
	a, _, _, rested := restingHello(t)
	visited := func() []RevisionKey {
		var keys []RevisionKey
		a.EachSummary(func(s Summary) { keys = append(keys, s.Key) })
		return keys
	}
	if got := visited(); len(got) != 0 {
		t.Errorf("at rest: visited %v, want none", got)
	}
	if err := a.Upsert(hello, map[string]string{"autoscaling.knative.dev/target": "50"}); err != nil {
		t.Fatal(err)
	}
	stepTo(a, at(rested+time.Second))
	if got := visited(); len(got) != 1 || got[0] != hello {
		t.Errorf("woken by a change: visited %v, want hello", got)
	}
}

// failingPlatform says hello's pods cannot start.
type failingPlatform struct{ *fakePlatform }

func (failingPlatform) Failure(key RevisionKey) (podfailure.Failure, bool) {
	if key != hello {
		return podfailure.Failure{}, false
	}
	return podfailure.Failure{Reason: "ContainerCrashing", Cause: "CrashLoopBackOff", Container: "app", Message: "crashes"}, true
}

// TestStatusCarriesStartFailure: the platform's start failure is in the
// revision's status, as the API serves it.
func TestStatusCarriesStartFailure(t *testing.T) {
	a := New(Options{Platform: failingPlatform{&fakePlatform{pods: map[RevisionKey][]Pod{}}}, Scraper: &fakeScraper{}, StatsAuth: testAuth(),
		Clock: &fakeClock{now: time.Unix(t0, 0)}})
	if err := a.Upsert(hello, nil); err != nil {
		t.Fatal(err)
	}
	st, _, err := a.decisions(hello, 1)
	if err != nil {
		t.Fatal(err)
	}
	if st.StartFailure == nil || st.StartFailure.Reason != "ContainerCrashing" || st.StartFailure.Container != "app" {
		t.Errorf("status %+v: want the platform's start failure", st.StartFailure)
	}
	if all := a.statuses(); len(all) != 1 || all[0].StartFailure == nil {
		t.Errorf("statuses %+v: want hello with its start failure", all)
	}
}
