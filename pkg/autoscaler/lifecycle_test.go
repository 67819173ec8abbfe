package autoscaler

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/stats"
)

// TestReleaseHandsOverEveryReport: reports that race with Release are
// either accepted and returned by it, or refused; none is taken and lost.
func TestReleaseHandsOverEveryReport(t *testing.T) {
	for round := range 20 {
		a, _, _, _ := newTestAutoscaler(t, nil, "")
		var accepted atomic.Int64
		var refused atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range 8 {
			wg.Go(func() {
				<-start
				for i := range 30 {
					st := load(hello.String(), 1, time.Second)
					st.PodName = fmt.Sprintf("activator-%d-%d", g, i)
					switch err := a.Ingest(st); {
					case err == nil:
						accepted.Add(1)
					case errors.Is(err, ErrUnknownRevision):
						refused.Add(1)
					default:
						t.Error(err)
					}
				}
			})
		}
		var handed []stats.Stat
		wg.Go(func() {
			<-start
			handed = a.release(context.Background(), hello)
		})
		close(start)
		wg.Wait()
		if int64(len(handed)) != accepted.Load() || accepted.Load()+refused.Load() != 240 {
			t.Fatalf("round %d: %d reports accepted, %d refused, %d handed over: want every accepted one handed over",
				round, accepted.Load(), refused.Load(), len(handed))
		}
		if err := a.Ingest(load(hello.String(), 1, time.Second)); !errors.Is(err, ErrUnknownRevision) {
			t.Fatalf("a report after Release: %v, want ErrUnknownRevision", err)
		}
	}
}

// TestReleaseSavesTheLearnedState: Release of a revision a worker has
// returns once the worker ended it, with its learned state saved; taken
// back, the revision restores that state.
func TestReleaseSavesTheLearnedState(t *testing.T) {
	store := newMemStore()
	d := newTimerDriver(t, store, nil)
	d.run(t0, t0+13*learnedTimer)
	d.r.signal(evClose) // queued: a worker has it
	released := make(chan []stats.Stat)
	go func() { released <- d.a.release(context.Background(), hello) }()
	for d.r.events.Load()&evStop == 0 { // the stop reached the revision
		runtime.Gosched()
	}
	d.r.handle(context.Background(), d.r.events.Swap(0)) // the worker
	if got := <-released; len(got) != 0 {
		t.Errorf("reports handed over: %v, want none (every second closed)", got)
	}
	if len(store.states[hello]) == 0 || len(store.saves) != 1 {
		t.Fatalf("saves %v: want the state saved once, by the release", store.saves)
	}
	if err := d.a.Upsert(hello, learnedAnnotations); err != nil {
		t.Fatal(err)
	}
	d.r = d.a.revisions[hello]
	from := t0 + 13*learnedTimer
	d.run(from, from+learnedTimer)
	if got := d.codes(from + 2); !cmp.Equal(got, []string{"LearnedRelease/restored"}) {
		t.Errorf("taken back: %v; want LearnedRelease/restored (the history it handed over)", got)
	}
}

// TestRevisionsShareTheirConfig: revisions with the same annotations share
// one config.Revision; the same annotations again change nothing; the
// last revision of a config takes it along.
func TestRevisionsShareTheirConfig(t *testing.T) {
	a, _, _ := newScheduled(t, nil)
	ann := map[string]string{"autoscaling.knative.dev/target": "7"}
	keys := []RevisionKey{{"ns", "a"}, {"ns", "b"}, {"other", "c"}}
	for _, k := range keys {
		if err := a.Upsert(k, ann); err != nil {
			t.Fatal(err)
		}
	}
	if len(a.configs) != 1 || a.revisions[keys[0]].cfg.rev != a.revisions[keys[2]].cfg.rev {
		t.Fatalf("%d configs for 3 revisions of the same annotations, want 1 shared", len(a.configs))
	}
	drain(a)
	if err := a.Upsert(keys[0], map[string]string{"autoscaling.knative.dev/target": "7"}); err != nil {
		t.Fatal(err)
	}
	if ev := a.revisions[keys[0]].events.Load(); ev != 0 {
		t.Errorf("the same annotations again signalled %b: want nothing (the decider keeps running)", ev)
	}
	if err := a.Upsert(keys[0], map[string]string{"autoscaling.knative.dev/target": "8"}); err != nil {
		t.Fatal(err)
	}
	drain(a)
	if len(a.configs) != 2 || a.revisions[keys[0]].cfg.rev.Target == a.revisions[keys[1]].cfg.rev.Target {
		t.Errorf("after a change: %d configs, want 2, and a's own", len(a.configs))
	}
	for _, k := range keys {
		a.Delete(k)
	}
	if len(a.configs) != 0 {
		t.Errorf("%d configs left after every revision went", len(a.configs))
	}
}

// TestSetConfigNamesTheRevisionsThatKeepTheirs: a ConfigMap change that
// some annotations cannot take names those revisions (a few, and how many
// more) once per problem; the others take it.
func TestSetConfigNamesTheRevisionsThatKeepTheirs(t *testing.T) {
	a, _, _ := newScheduled(t, nil)
	for i := range 8 {
		if err := a.Upsert(RevisionKey{"ns", fmt.Sprint("rev-", i)}, map[string]string{"autoscaling.knative.dev/max-scale": "20"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Upsert(hello, nil); err != nil {
		t.Fatal(err)
	}
	err := a.SetConfig(map[string]string{"stable-window": "6s", "panic-window-percentage": "50", "max-scale-limit": "10", "max-scale": "5"})
	if err == nil {
		t.Fatal("no error: want the revisions with a max-scale of 20 named")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "revisions ns/rev-0, ns/rev-1, ns/rev-2, ns/rev-3, ns/rev-4 and 3 more keep the previous configuration: ") ||
		strings.Count(msg, "keep") != 1 || strings.Contains(msg, "default/hello") {
		t.Errorf("error %q: want the 8 revisions named once, hello not", msg)
	}
	drain(a)
	if got := a.revisions[hello].cfg.rev.PanicWindow; got != 3*time.Second {
		t.Errorf("hello's panic window %v, want the new 3s", got)
	}
	// A new revision with those annotations is refused: they are invalid
	// now, whatever the revisions that had them keep.
	if err := a.Upsert(RevisionKey{"ns", "late"}, map[string]string{"autoscaling.knative.dev/max-scale": "20"}); err == nil ||
		!strings.Contains(err.Error(), "not autoscaled until fixed") || !strings.Contains(err.Error(), "max-scale-limit is 10") {
		t.Errorf("a new revision with a max-scale of 20: %v, want it refused", err)
	}
}

// TestDeletedRevisionNeverRunsAgain: a revision deleted while queued ends
// once, leaves the schedule and takes no more events.
func TestDeletedRevisionNeverRunsAgain(t *testing.T) {
	a, p, s := newScheduled(t, nil)
	if err := a.Upsert(hello, nil); err != nil {
		t.Fatal(err)
	}
	p.setPods(hello, 1)
	s.set(3, 3)
	stepTo(a, at(0))
	r := a.revisions[hello]
	r.signal(evConfig) // queued, not run
	reads := p.readsOf(hello)
	a.Delete(hello)
	r.signal(evPoke)
	drain(a)
	stepTo(a, at(3*time.Second))
	if !r.stopped || a.deps.schedule.ticks() != 0 || p.readsOf(hello) != reads {
		t.Errorf("deleted revision: stopped %v, %d ticking, %d pod reads after: want it ended and idle",
			r.stopped, a.deps.schedule.ticks(), p.readsOf(hello)-reads)
	}
	if slices.Contains(slices.Collect(func(yield func(RevisionKey) bool) {
		for k := range a.revisions {
			yield(k)
		}
	}), hello) {
		t.Error("still listed")
	}
}
