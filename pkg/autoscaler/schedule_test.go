package autoscaler

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/scaling/decider"
)

// stepTo is Run without goroutines: it hands out the work of every phase
// boundary up to now, the fake clock set to each boundary in turn, and
// runs the revisions that have work in this goroutine, as the workers do.
func stepTo(a *Autoscaler, now time.Time) {
	c := a.deps.clock.(*fakeClock)
	a.deps.schedule.due(now, func(w *dueWork) {
		c.set(w.at)
		a.hand(w, nil)
		drain(a)
	})
	c.set(now)
	drain(a)
}

// drain does every job in the run queue, as a worker would.
func drain(a *Autoscaler) {
	for j, ok := a.deps.queue.pop(); ok; j, ok = a.deps.queue.pop() {
		j.run(context.Background())
	}
}

// countingPlatform is a fakePlatform that counts the ReadyPods calls of
// each revision.
type countingPlatform struct {
	*fakePlatform
	mu    sync.Mutex
	reads map[RevisionKey]int
}

func (p *countingPlatform) ReadyPods(ctx context.Context, rev RevisionKey) ([]Pod, error) {
	p.mu.Lock()
	p.reads[rev]++
	p.mu.Unlock()
	return p.fakePlatform.ReadyPods(ctx, rev)
}

func (p *countingPlatform) readsOf(rev RevisionKey) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reads[rev]
}

// newScheduled returns an autoscaler driven by stepTo from t0, with the
// test configuration of newTestAutoscaler.
func newScheduled(t *testing.T, data map[string]string) (*Autoscaler, *countingPlatform, *fakeScraper) {
	t.Helper()
	p := &countingPlatform{fakePlatform: &fakePlatform{pods: map[RevisionKey][]Pod{}}, reads: map[RevisionKey]int{}}
	s := &fakeScraper{}
	a := New(Options{Platform: p, Scraper: s, StatsAuth: testAuth(), Clock: &fakeClock{now: time.Unix(t0, 0)}})
	cfg := map[string]string{"stable-window": "6s", "scale-to-zero-grace-period": "4s"}
	for k, v := range data {
		cfg[k] = v
	}
	if err := a.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	return a, p, s
}

func TestSlots(t *testing.T) {
	for _, tt := range []struct {
		at   time.Time
		slot int64
	}{
		{time.Unix(t0, 0), t0 * phases},
		{time.Unix(t0, int64(phaseStep)-1), t0 * phases},
		{time.Unix(t0, 3*int64(phaseStep)+1), t0*phases + 3},
		{time.Unix(t0+1, 0).Add(-time.Nanosecond), t0*phases + phases - 1},
	} {
		if got := slotOf(tt.at); got != tt.slot {
			t.Errorf("slotOf(%v) = %d, want %d", tt.at, got, tt.slot)
		}
	}
	if got := slotTime(t0*phases + 7); !got.Equal(time.Unix(t0, 7*int64(phaseStep))) {
		t.Errorf("slotTime = %v", got)
	}
}

// TestPhasesSpread: revision keys hash to phases all over the second, the
// same in every process, and their rest checks to 15-30s.
func TestPhasesSpread(t *testing.T) {
	count := make([]int, phases)
	for i := range 10000 {
		h := keyHash(RevisionKey{Namespace: "ns", Name: fmt.Sprint("rev-", i)})
		count[phaseOf(h)]++
		if d := restCheckAfter(h); d < restCheck/2 || d > restCheck {
			t.Fatalf("rest check after %v: want within [%v, %v]", d, restCheck/2, restCheck)
		}
	}
	for ph, n := range count {
		if n < 50 || n > 150 {
			t.Errorf("phase %d: %d of 10,000 revisions, want about 100", ph, n)
		}
	}
	if got := phaseOf(keyHash(hello)); got != phaseOf(keyHash(RevisionKey{Namespace: "default", Name: "hello"})) {
		t.Errorf("phase of %s not stable", hello)
	}
}

// TestTickOrigin: revisions decide every tick interval on seconds of their
// own, half of them on odd ones with the 2s default; hello on odd ones,
// as the tests of this package assume.
func TestTickOrigin(t *testing.T) {
	odd := 0
	for i := range 1000 {
		h := keyHash(RevisionKey{Namespace: "ns", Name: fmt.Sprint("rev-", i)})
		for _, first := range []int64{t0, t0 + 1, t0 + 7} {
			o := tickOrigin(h, first, 2*time.Second)
			if o > first || first-o >= 2 || o%2 != tickOrigin(h, t0+100, 2*time.Second)%2 {
				t.Fatalf("tickOrigin(%d) = %d: want the revision's own parity, at most a tick before", first, o)
			}
		}
		if o := tickOrigin(h, t0, 3*time.Second); o > t0 || t0-o >= 3 {
			t.Fatalf("3s tick: origin %d for %d", o, t0)
		}
		odd += int(tickOrigin(h, t0, 2*time.Second) % 2)
	}
	if odd < 400 || odd > 600 {
		t.Errorf("%d of 1,000 revisions decide on odd seconds, want about half", odd)
	}
	if o := tickOrigin(keyHash(hello), t0, 2*time.Second); o != t0-1 {
		t.Errorf("hello's tick origin %d, want t0-1 (odd seconds)", o-t0)
	}
}

// TestScheduleDue: each ticking revision is due once a second at its
// phase, for the second before; a sleeper is checked at its boundary and
// not after it woke; after a stall the schedule skips to the last second.
func TestScheduleDue(t *testing.T) {
	s := newSchedule()
	rs := []*revision{{phase: 0}, {phase: 30}, {phase: 99}, {phase: 30}}
	for _, r := range rs {
		r.sched.index = -1
		s.tick(r)
	}
	sleeper := &revision{phase: 50}
	sleeper.sched.index = -1
	s.tick(sleeper)
	s.sleep(sleeper, time.Unix(t0+2, 0))
	type due struct {
		Slot, Sec int64
		Rev       int
		Check     bool
	}
	var got []due
	record := func(w *dueWork) {
		for _, r := range w.closing {
			for i, x := range rs {
				if x == r {
					got = append(got, due{slotOf(w.at) - t0*phases, w.sec - t0, i, false})
				}
			}
		}
		for range w.checking {
			got = append(got, due{slotOf(w.at) - t0*phases, w.sec - t0, -1, true})
		}
	}
	s.next = t0 * phases // the first boundary of t0
	s.due(time.Unix(t0, 0).Add(30*phaseStep), record)
	want := []due{{0, -1, 0, false}, {30, -1, 1, false}, {30, -1, 3, false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("up to t0+300ms (-want +got):\n%s", diff)
	}
	got = nil
	s.due(time.Unix(t0+1, 0).Add(30*phaseStep), record)
	s.due(time.Unix(t0+2, 0).Add(60*phaseStep), record) // not a second late: no boundary skipped
	want = []due{{99, -1, 2, false}, {100, 0, 0, false}, {130, 0, 1, false}, {130, 0, 3, false}, {199, 0, 2, false},
		{200, 1, 0, false}, {230, 1, 1, false}, {230, 1, 3, false}, {250, 1, -1, true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("up to t0+2.6s (-want +got):\n%s", diff)
	}
	s.sleep(sleeper, time.Unix(t0+3, 0))
	s.tick(sleeper) // woke before its check: the check is stale
	s.untickLocked(sleeper)
	got = nil
	s.due(time.Unix(t0+3, 0).Add(60*phaseStep), func(w *dueWork) {
		if len(w.checking) > 0 {
			got = append(got, due{slotOf(w.at) - t0*phases, 0, -1, true})
		}
	})
	if len(got) != 0 {
		t.Errorf("a woken revision was checked: %v", got)
	}
	// A stall of a minute: one close per revision, for the last second.
	got = nil
	s.due(time.Unix(t0+63, 0).Add(31*phaseStep), record)
	closes := map[int]int64{}
	for _, d := range got {
		closes[d.Rev]++
	}
	if diff := cmp.Diff(map[int]int64{0: 1, 1: 1, 2: 1, 3: 1}, closes); diff != "" {
		t.Errorf("closes after a stall (-want +got):\n%s", diff)
	}
	// The wall clock set back a minute: the schedule goes on from there,
	// and never sleeps more than a phase.
	got = nil
	back := time.Unix(t0+3, 0).Add(50 * phaseStep)
	s.due(back, record)
	s.due(back.Add(50*phaseStep), record)
	if want := []due{{399, 2, 2, false}, {400, 3, 0, false}}; !cmp.Equal(want, got) {
		t.Errorf("after the clock went back: %v, want %v", got, want)
	}
	if w := s.wait(back.Add(-time.Hour)); w != phaseStep {
		t.Errorf("wait %v an hour before the next boundary, want at most a phase", w)
	}
	s.remove(rs[1])
	if n := s.ticks(); n != 3 {
		t.Errorf("%d ticking after a remove, want 3", n)
	}
}

// TestRevisionsCloseAtTheirPhase: many revisions with traffic each close
// every second once, at their own phase, and decide on the tick: the
// decisions spread over the second instead of queueing at its start.
func TestRevisionsCloseAtTheirPhase(t *testing.T) {
	a, p, s := newScheduled(t, nil)
	var keys []RevisionKey
	for i := range 300 {
		key := RevisionKey{Namespace: "default", Name: fmt.Sprint("rev-", i)}
		keys = append(keys, key)
		if err := a.Upsert(key, map[string]string{"autoscaling.knative.dev/target": "10"}); err != nil {
			t.Fatal(err)
		}
		p.setPods(key, 1)
	}
	s.set(5, 10)
	type decided struct{ at, made, due time.Time }
	byKey := map[RevisionKey][]decided{}
	a.deps.onDecision = func(key RevisionKey, d *decider.Decision, due time.Time) {
		byKey[key] = append(byKey[key], decided{d.At, a.deps.clock.Now(), due})
	}
	a.deps.schedule.next = t0 * phases
	for ms := 0; ms < 6000; ms += 10 {
		stepTo(a, time.Unix(t0, 0).Add(time.Duration(ms)*time.Millisecond))
	}
	phasesSeen := map[int64]bool{}
	for _, key := range keys {
		phase := time.Duration(phaseOf(keyHash(key))) * phaseStep
		phasesSeen[int64(phase)] = true
		if n := p.readsOf(key); n < 5 || n > 6 {
			t.Errorf("%s read its pods %d times in 6s, want a close a second", key, n)
		}
		ds := byKey[key]
		if len(ds) < 2 {
			t.Fatalf("%s: decisions %v, want one every 2s", key, ds)
		}
		for _, d := range ds {
			if want := d.at.Add(time.Second + phase); !d.made.Equal(want) || !decisionDue(key, d.at).Equal(want) || !d.due.Equal(want) {
				t.Errorf("%s: decision of %v made at %v, due at %v (hook: %v), want all its phase %v after the second",
					key, d.at, d.made, decisionDue(key, d.at), d.due, phase)
			}
		}
	}
	if len(phasesSeen) < 90 {
		t.Errorf("%d phases used by 300 revisions, want them spread over the second", len(phasesSeen))
	}
}

// tickClock is a fake clock whose After fires when the test moves it past
// the deadline.
type tickClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []tickWaiter
}

type tickWaiter struct {
	at time.Time
	ch chan time.Time
}

func (c *tickClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *tickClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, tickWaiter{c.now.Add(d), ch})
	return ch
}

func (c *tickClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
			continue
		}
		w.ch <- c.now
	}
	c.waiters = kept
}

// TestRun: Run's dispatcher and workers close the revisions' seconds as the
// clock moves and decide on the ticks; a revision deleted while it runs
// stops; when Run ends, the recordings are complete.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	p := &fakePlatform{pods: map[RevisionKey][]Pod{}}
	s := &fakeScraper{}
	clock := &tickClock{now: time.Unix(t0, 0)}
	decided := make(chan RevisionKey, 1000)
	a := New(Options{Platform: p, Scraper: s, Clock: clock, RecordDir: dir,
		OnDecision: func(key RevisionKey, _ *decider.Decision, _ time.Time) { decided <- key }})
	other := RevisionKey{Namespace: "default", Name: "other"}
	for _, k := range []RevisionKey{hello, other} {
		if err := a.Upsert(k, map[string]string{"autoscaling.knative.dev/target": "10"}); err != nil {
			t.Fatal(err)
		}
		p.setPods(k, 1)
	}
	s.set(15, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- a.Run(ctx) }()
	// wait moves the clock until each revision of want decided that many
	// times more; it returns the decisions of every revision meanwhile.
	wait := func(want map[RevisionKey]int) map[RevisionKey]int {
		t.Helper()
		got := map[RevisionKey]int{}
		enough := func() bool {
			for k, n := range want {
				if got[k] < n {
					return false
				}
			}
			return true
		}
		guard := time.After(20 * time.Second) // real time: a guard against a hang, not a wait
		for !enough() {
			select {
			case k := <-decided:
				got[k]++
			case <-guard:
				t.Fatalf("decisions %v, want %v", got, want)
			default:
				clock.advance(10 * time.Millisecond)
				runtime.Gosched()
			}
		}
		return got
	}
	wait(map[RevisionKey]int{hello: 3, other: 3})
	a.mu.Lock()
	r := a.revisions[other]
	a.mu.Unlock()
	a.Delete(other)
	// A close of other may have been under way: it ends (a busy machine
	// may hold its worker for any time), and its decision, if any, is
	// taken with hello's next ones.
	r.waitEnded(context.Background())
	wait(map[RevisionKey]int{hello: 4})
	if got := wait(map[RevisionKey]int{hello: 4}); got[other] != 0 {
		t.Errorf("decisions %v, seconds after other was deleted", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"default_hello-1.json", "default_other-1.json"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		parseRecording(t, data) // complete: it parses
	}
	if err := a.Run(context.Background()); err == nil {
		t.Error("Run ran twice")
	}
}

// TestKeyHashIsFNV1a: a revision's phase and rest checks come from
// keyHash, so it must stay hash/fnv's 32-bit FNV-1a of namespace/name in
// every version (a revision keeps its phase across restarts and moves).
func TestKeyHashIsFNV1a(t *testing.T) {
	for _, key := range []RevisionKey{{}, {Namespace: "default", Name: "hello-00001"}, {Namespace: "bench", Name: "rev-99999"},
		{Namespace: "ns", Name: "ünïcode-ñame"}, {Name: "no-namespace"}} {
		h := fnv.New32a()
		h.Write([]byte(key.Namespace + "/" + key.Name))
		if got, want := keyHash(key), h.Sum32(); got != want {
			t.Errorf("keyHash(%v) = %d, want FNV-1a %d", key, got, want)
		}
	}
}

// TestRevisionSizeClass: a revision stays in Go's 640-byte size class
// (10 cache lines, the hot fields first): at 100,000 revisions with
// traffic and a million at rest, the next class (704) is 64 bytes more
// for each.
func TestRevisionSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(revision{}); n > 640 {
		t.Errorf("a revision takes %d bytes, more than the 640 of its size class", n)
	}
}

// TestHandBoundsTheQueuedCloses: when the workers fall behind, the
// dispatcher queues no more closes while more than a second of them (the
// ticking revisions) wait, so the run queue stays bounded; the closes it
// queued are all taken by the workers, and each revision closes the
// latest second handed to it.
func TestHandBoundsTheQueuedCloses(t *testing.T) {
	a, p, _ := newScheduled(t, nil)
	var revs []*revision
	for i := range 10 {
		key := RevisionKey{Namespace: "ns", Name: "rev-" + strconv.Itoa(i)}
		if err := a.Upsert(key, nil); err != nil {
			t.Fatal(err)
		}
		p.setPods(key, 1)
		r := a.revisions[key]
		a.deps.schedule.tick(r)
		revs = append(revs, r)
	}
	var batch []job
	for sec := range int64(5) { // no worker runs: the closes pile up
		batch = a.hand(&dueWork{at: time.Unix(t0+sec+1, 0), sec: t0 + sec, closing: revs}, batch[:0])
	}
	if got, want := a.deps.queue.closesWaiting(), 2*len(revs); got != want {
		t.Errorf("%d closes queued after 5 boundaries without a worker, want %d (at most a second more than the %d ticking)", got, want, len(revs))
	}
	drain(a)
	if got := a.deps.queue.closesWaiting(); got != 0 {
		t.Errorf("%d closes waiting after the queue was drained", got)
	}
	for _, r := range revs {
		if r.dueSec.Load() != t0+1 || r.loop.Last != t0+1 {
			t.Errorf("%s: last close handed %d, last second stepped %d, want both %d", r.key, r.dueSec.Load(), r.loop.Last, t0+1)
		}
	}
}
