package autoscaler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/decider"
	"ebb.dev/ebb/pkg/stats"
)

// memStore is a LearnedStore in memory.
type memStore struct {
	mu     sync.Mutex
	states map[RevisionKey][]byte
	saves  [][]RevisionKey
	fail   error
}

func newMemStore() *memStore {
	return &memStore{states: map[RevisionKey][]byte{}}
}

func (m *memStore) Load(_ context.Context, rev RevisionKey) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.states[rev], nil
}

func (m *memStore) Save(_ context.Context, states map[RevisionKey][]byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.saves = append(m.saves, slices.SortedFunc(maps.Keys(states), cmpKeys))
	if m.fail != nil {
		return m.fail
	}
	for rev, state := range states {
		m.states[rev] = append([]byte(nil), state...)
	}
	return nil
}

// learnedAnnotations: the learned policy with a cold start worth 2 minutes
// and a 10 s lead, for a timer every learnedTimer.
var learnedAnnotations = map[string]string{config.AnnotationScaleToZeroPolicy: config.ScaleToZeroLearned}

const learnedTimer = 30 // seconds

// timerDriver runs the revision hello of an autoscaler second by second: a
// request at every learnedTimer-th second (through the activator when no
// pod is ready), the ready pods following the last scale at once; it
// keeps each decision's learned reasons.
type timerDriver struct {
	a       *Autoscaler
	r       *revision
	p       *fakePlatform
	s       *fakeScraper
	mu      sync.Mutex
	cur     int64                      // the second being closed
	reasons map[int64][]decider.Reason // by second
	decided map[int64]bool             // the seconds decided
}

func newTimerDriver(t *testing.T, store LearnedStore, log *zap.Logger) *timerDriver {
	t.Helper()
	d := &timerDriver{p: &fakePlatform{pods: map[RevisionKey][]Pod{}}, s: &fakeScraper{}, reasons: map[int64][]decider.Reason{},
		decided: map[int64]bool{}}
	d.a = New(Options{Platform: d.p, Scraper: d.s, StatsAuth: testAuth(), Clock: &fakeClock{now: time.Unix(t0, 0)},
		LearnedStore: store, Logger: log, OnDecision: func(_ RevisionKey, dec *decider.Decision, _ time.Time) {
			d.mu.Lock()
			defer d.mu.Unlock()
			d.decided[d.cur] = true
			for _, r := range dec.Reasons() {
				switch r.Code {
				case decider.LearnedFallback, decider.LearnedRelease, decider.PreWarm, decider.KeepAlive:
					d.reasons[d.cur] = append(d.reasons[d.cur], r)
				}
			}
		}})
	if err := d.a.SetConfig(map[string]string{"stable-window": "6s", "scale-to-zero-grace-period": "4s"}); err != nil {
		t.Fatal(err)
	}
	if err := d.a.Upsert(hello, learnedAnnotations); err != nil {
		t.Fatal(err)
	}
	d.r = d.a.revisions[hello]
	return d
}

func (d *timerDriver) run(from, to int64) {
	ctx := context.Background()
	for sec := from; sec < to; sec++ {
		d.p.mu.Lock()
		n := 0
		if len(d.p.scales) > 0 {
			n = int(d.p.scales[len(d.p.scales)-1])
		}
		d.p.mu.Unlock()
		d.p.setPods(hello, n)
		busy := (sec-t0)%learnedTimer == 0
		switch {
		case busy && n > 0:
			d.s.set(1, 1)
		case busy:
			d.s.set(0, 0)
			d.r.report(stats.Stat{Source: stats.SourceActivator, Revision: hello.String(), PodName: "act",
				Period: time.Second, AverageConcurrency: 1, RequestCount: 1})
		default:
			d.s.set(0, 0)
		}
		d.mu.Lock()
		d.cur = sec
		d.mu.Unlock()
		d.r.second(ctx, sec)
	}
}

// codes are the learned reasons of the decision at second sec, or of the
// first one after it (the revision decides on its own ticks), as
// "Code/Detail".
func (d *timerDriver) codes(sec int64) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	for !d.decided[sec] && sec < d.cur {
		sec++
	}
	var out []string
	for _, r := range d.reasons[sec] {
		out = append(out, string(r.Code)+"/"+r.Detail)
	}
	return out
}

// TestLearnedStateSurvivesRestart: an autoscaler learns a revision's timer
// and saves its state; a new autoscaler on the same store (a restart, or
// the next leader) restores it when it creates the revision's decider and
// releases and pre-warms from its first round, saying that the history was
// restored; without the store it falls back to Knative's rules.
func TestLearnedStateSurvivesRestart(t *testing.T) {
	store := newMemStore()
	first := newTimerDriver(t, store, nil)
	rounds := int64(14)
	first.run(t0, t0+rounds*learnedTimer)
	if got := first.codes(t0 + 13*learnedTimer + 2); !cmp.Equal(got, []string{"LearnedRelease/"}) {
		t.Fatalf("the first autoscaler after 13 gaps: %v; want LearnedRelease", got)
	}
	first.a.deps.learned.flushAll()
	if len(store.states[hello]) == 0 {
		t.Fatal("nothing saved")
	}

	restart := t0 + rounds*learnedTimer // the next request is the new autoscaler's first second
	core, logs := observer.New(zap.InfoLevel)
	second := newTimerDriver(t, store, zap.New(core))
	second.run(restart, restart+2*learnedTimer)
	if got := second.codes(restart + 2); !cmp.Equal(got, []string{"LearnedRelease/restored"}) {
		t.Errorf("the restarted autoscaler's first decision without load: %v; want LearnedRelease/restored", got)
	}
	prewarm := int64(-1)
	for sec := restart + 2; sec < restart+learnedTimer; sec += 2 {
		if got := second.codes(sec); cmp.Equal(got, []string{"PreWarm/restored"}) {
			prewarm = sec
			break
		}
	}
	if prewarm < 0 || prewarm > restart+learnedTimer-2 {
		t.Errorf("no PreWarm/restored before the request at %d (decisions: %v)", restart+learnedTimer, second.reasons)
	}
	if e := logs.FilterMessage("learned state restored").All(); len(e) != 1 || e[0].ContextMap()["gaps"] != int64(13) {
		t.Errorf("log lines %v; want one \"learned state restored\" with 13 gaps", e)
	}

	fresh := newTimerDriver(t, nil, nil)
	fresh.run(restart, restart+learnedTimer)
	if got := fresh.codes(restart + 2); !cmp.Equal(got, []string{"LearnedFallback/"}) {
		t.Errorf("without a store: %v; want LearnedFallback", got)
	}
}

// TestLearnedStateCorruptIgnored: a state that does not decode is logged
// with its reason and the policy learns afresh.
func TestLearnedStateCorruptIgnored(t *testing.T) {
	store := newMemStore()
	store.states[hello] = []byte("not a learned state")
	core, logs := observer.New(zap.InfoLevel)
	d := newTimerDriver(t, store, zap.New(core))
	d.run(t0, t0+learnedTimer)
	if got := d.codes(t0 + 10); !cmp.Equal(got, []string{"LearnedFallback/"}) {
		t.Errorf("after a corrupt state: %v; want LearnedFallback", got)
	}
	e := logs.FilterMessage("learned state ignored; the policy learns afresh").All()
	if len(e) != 1 || !strings.Contains(fmt.Sprint(e[0].ContextMap()["error"]), "learned state corrupt") {
		t.Errorf("log lines %v; want one saying the state is corrupt", e)
	}
}

// TestLearnedStateKeptAcrossReconfigure: a configuration change restarts
// the decider with the previous one's history, store or not.
func TestLearnedStateKeptAcrossReconfigure(t *testing.T) {
	d := newTimerDriver(t, nil, nil)
	d.run(t0, t0+13*learnedTimer)
	ann := map[string]string{config.AnnotationScaleToZeroPolicy: config.ScaleToZeroLearned, config.AnnotationColdStartCost: "3m"}
	if err := d.a.Upsert(hello, ann); err != nil {
		t.Fatal(err)
	}
	d.r.reconfigure(*d.r.nextCfg.Swap(nil))
	from := t0 + 13*learnedTimer
	d.run(from, from+learnedTimer)
	if got := d.codes(from + 2); !cmp.Equal(got, []string{"LearnedRelease/restored"}) {
		t.Errorf("after a configuration change: %v; want LearnedRelease/restored", got)
	}
}

// TestLearnedSaverBatches: one waiting state per revision (a newer one
// replaces it and keeps its place), at most a batch per flush, the longest
// waiting first; a failed batch waits again; a deleted revision's state
// is not saved.
func TestLearnedSaverBatches(t *testing.T) {
	store := newMemStore()
	s := newLearnedSaver(Options{LearnedStore: store, LearnedSaveBatch: 2}, zap.NewNop())
	key := func(i int) RevisionKey { return RevisionKey{Namespace: "ns", Name: fmt.Sprint("r", i)} }
	for _, i := range []int{3, 0, 1, 2} {
		s.offer(key(i), []byte{byte(i)})
	}
	s.offer(key(3), []byte{9})
	ctx := context.Background()
	store.fail = errors.New("apiserver down")
	s.flush(ctx, s.batch)
	store.fail = nil
	s.flush(ctx, s.batch)
	s.forget(key(2))
	s.flushAll()
	want := [][]RevisionKey{{key(0), key(3)}, {key(0), key(3)}, {key(1)}}
	if diff := cmp.Diff(want, store.saves); diff != "" {
		t.Errorf("batches (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[RevisionKey][]byte{key(0): {0}, key(1): {1}, key(3): {9}}, store.states); diff != "" {
		t.Errorf("saved (-want +got):\n%s", diff)
	}
	if left := s.take(10); len(left) != 0 {
		t.Errorf("still waiting: %v", left)
	}
}
