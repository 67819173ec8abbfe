package autoscaler

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/scaling/decider"
	"ebb.dev/ebb/pkg/scaling/scenario"
	"ebb.dev/ebb/pkg/scaling/secondloop"
)

// at is a time t0 + d.
func at(d time.Duration) time.Time { return time.Unix(t0, 0).Add(d) }

// decisionLog keeps the decisions an autoscaler makes, with when they were
// due and when they were made.
type decisionLog struct {
	a    *Autoscaler
	decs []loggedDecision
}

type loggedDecision struct {
	key      RevisionKey
	at       int64 // the second decided
	made     time.Time
	desired  int32
	codes    []string
	resting  bool // the status said so just before
	recorded decider.Decision
}

func logDecisions(a *Autoscaler) *decisionLog {
	l := &decisionLog{a: a}
	a.deps.onDecision = func(key RevisionKey, d *decider.Decision, _ time.Time) {
		var codes []string
		for _, r := range d.Reasons() {
			codes = append(codes, string(r.Code))
		}
		l.decs = append(l.decs, loggedDecision{key: key, at: d.At.Unix(), made: a.deps.clock.Now(),
			desired: d.Desired, codes: codes, recorded: *d})
	}
	return l
}

// toRest runs hello with one busy pod, then without load, then without
// pods, until it rests at zero; it returns the time it rested.
func toRest(t *testing.T, a *Autoscaler, p *countingPlatform, s *fakeScraper, from time.Duration) time.Duration {
	t.Helper()
	p.setPods(hello, 1)
	s.set(5, 5)
	now := from
	for ; now < from+10*time.Second; now += time.Second {
		stepTo(a, at(now))
	}
	s.set(0, 0)
	for ; now < from+40*time.Second; now += time.Second {
		stepTo(a, at(now))
	}
	p.setPods(hello, 0)
	for limit := now + time.Minute; now < limit; now += time.Second {
		stepTo(a, at(now))
		if st := statusOf(t, a); st.Resting {
			if st.Desired != 0 || st.Recommended != 0 {
				t.Fatalf("resting with %+v: want desired 0 and a recommendation of 0", st)
			}
			return now
		}
	}
	t.Fatalf("not resting a minute after its pods went: %+v", statusOf(t, a))
	return 0
}

// restingHello is an autoscaler whose revision hello has run, lost its
// load and its pod, and rests at zero; with its decisions logged and the
// time it rested.
func restingHello(t *testing.T) (*Autoscaler, *countingPlatform, *decisionLog, time.Duration) {
	t.Helper()
	a, p, s := newScheduled(t, nil)
	log := logDecisions(a)
	if err := a.Upsert(hello, nil); err != nil {
		t.Fatal(err)
	}
	return a, p, log, toRest(t, a, p, s, 0)
}

func statusOf(t *testing.T, a *Autoscaler) Status {
	t.Helper()
	st, _, err := a.decisions(hello, 1)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestRestCostsNothing: a new revision at zero without traffic (initial
// scale 0) decides twice and rests; for ten minutes after, it makes no
// decision and reads its pods only at its checks (every 15 to 30s).
func TestRestCostsNothing(t *testing.T) {
	a, p, _ := newScheduled(t, map[string]string{"initial-scale": "0", "allow-zero-initial-scale": "true"})
	log := logDecisions(a)
	if err := a.Upsert(hello, nil); err != nil {
		t.Fatal(err)
	}
	for now := time.Duration(0); now <= 10*time.Second; now += time.Second {
		stepTo(a, at(now))
	}
	if st := statusOf(t, a); !st.Resting || a.deps.schedule.ticks() != 0 {
		t.Fatalf("status %+v, %d ticking: want hello resting after its first decisions", st, a.deps.schedule.ticks())
	}
	decided, reads := len(log.decs), p.readsOf(hello)
	for now := 10 * time.Second; now <= 610*time.Second; now += time.Second {
		stepTo(a, at(now))
	}
	if n := len(log.decs) - decided; n != 0 {
		t.Errorf("%d decisions in ten minutes at rest, want none", n)
	}
	checks := p.readsOf(hello) - reads
	every := restCheckAfter(keyHash(hello))
	if want := int(600 * time.Second / every); checks < want-1 || checks > want+1 {
		t.Errorf("%d pod reads in ten minutes at rest, want about %d (one check every %v)", checks, want, every)
	}
}

// TestPokeWakesAtOnce: traffic reported for a resting revision at zero
// closes its open second at once (the one its phase has not closed yet:
// before its phase in a wall-clock second, the one before) and asks for a
// replica; the decision a resting revision skipped up to then is made
// once, for the history.
func TestPokeWakesAtOnce(t *testing.T) {
	phase := time.Duration(phaseOf(keyHash(hello))) * phaseStep // 90ms
	for _, tt := range []struct {
		name  string
		after time.Duration // into a wall-clock second
		open  int64         // the second closed, from the wall-clock one
	}{
		{"after the phase", phase + 243*time.Millisecond, 0},
		{"before the phase", phase - 40*time.Millisecond, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, _, log, rested := restingHello(t)
			stepTo(a, at(rested+5*time.Minute))
			pokeAt := at(rested + 5*time.Minute + tt.after)
			a.deps.clock.(*fakeClock).set(pokeAt)
			before := len(log.decs)
			if err := a.Ingest(load(hello.String(), 1, 0)); err != nil {
				t.Fatal(err)
			}
			drain(a) // a worker takes it at once
			got := log.decs[before:]
			if len(got) != 2 {
				t.Fatalf("decisions on the poke: %+v, want the skipped tick's and the poke's", got)
			}
			poke := got[1]
			if want := pokeAt.Unix() + tt.open; poke.at != want || !poke.made.Equal(pokeAt) || poke.desired != 1 {
				t.Errorf("poke decision %+v: want at once (second %d, made at %v) with one replica", poke, want, pokeAt)
			}
			if catchUp := got[0]; catchUp.at >= poke.at || catchUp.desired != 0 || !slices.Contains(catchUp.codes, string(decider.ScaledToZero)) {
				t.Errorf("catch-up decision %+v: want the last tick slept through, still at zero", catchUp)
			}
			if st := statusOf(t, a); st.Resting || st.Desired != 1 {
				t.Errorf("after the poke: %+v, want awake with one replica", st)
			}
			stepTo(a, pokeAt.Add(4*time.Second)) // its phases close the next seconds, not the poked one again
			if n := len(log.decs) - before; n < 3 || log.decs[before+2].at <= poke.at {
				t.Errorf("after the poke: decisions %+v", log.decs[before:])
			}
		})
	}
}

// TestReportWakesARestingRevision: a report without load (no poke) wakes
// a resting revision; its next close, at its phase, takes the report.
func TestReportWakesARestingRevision(t *testing.T) {
	a, _, _, rested := restingHello(t)
	stepTo(a, at(rested+time.Minute))
	if err := a.Ingest(load(hello.String(), 0, time.Second)); err != nil {
		t.Fatal(err)
	}
	drain(a)
	r := a.revisions[hello]
	if statusOf(t, a).Resting || a.deps.schedule.ticks() != 1 {
		t.Fatalf("a report did not wake the revision")
	}
	stepTo(a, at(rested+time.Minute+time.Second+time.Duration(r.phase)*phaseStep))
	if r.hasPending() {
		t.Errorf("the report is still pending after the revision's next close")
	}
}

// TestGoingToSleepSeesALateReport: a report that arrives while the
// revision decides to sleep (it found the revision awake, so it did not
// wake it) keeps the revision awake.
func TestGoingToSleepSeesALateReport(t *testing.T) {
	a, _, _, rested := restingHello(t)
	r := a.revisions[hello]
	r.wake()
	r.rest.ok = true // as after a decision at rest
	r.mu.Lock()
	r.inbox.Add(load(hello.String(), 0, time.Second), secondloop.Open) // the report, which saw it awake
	r.mu.Unlock()
	r.sleep(at(rested + time.Second))
	if r.asleep.Load() || a.deps.schedule.ticks() != 1 {
		t.Errorf("went to sleep with a report pending")
	}
}

// TestPodsWakeARestingRevision: pods someone else started while the
// revision rested are seen at its next check, and its decider runs again.
func TestPodsWakeARestingRevision(t *testing.T) {
	a, p, log, rested := restingHello(t)
	stepTo(a, at(rested+time.Second))
	p.setPods(hello, 2)
	started := rested + time.Second
	for now := started; now < started+restCheck+3*time.Second; now += time.Second {
		stepTo(a, at(now))
		if n := len(log.decs); n > 0 && log.decs[n-1].recorded.At.Unix() > at(started).Unix() && statusOf(t, a).Ready == 2 {
			return
		}
	}
	t.Errorf("no decision seeing the 2 pods within %v of their start: %+v", restCheck+3*time.Second, statusOf(t, a))
}

// TestRestingRecordingReplays: a revision of the learned policy invoked on
// a timer rests between its requests, wakes for the pre-warm and for the
// requests, and its recording replays through the decider to the very
// decisions it made (the replay also makes the ones it slept through: the
// last decision again, the reasons' numbers aside).
func TestRestingRecordingReplays(t *testing.T) {
	dir := t.TempDir()
	p := &countingPlatform{fakePlatform: &fakePlatform{pods: map[RevisionKey][]Pod{}}, reads: map[RevisionKey]int{}}
	s := &fakeScraper{}
	a := New(Options{Platform: p, Scraper: s, StatsAuth: testAuth(), RecordDir: dir, Clock: &fakeClock{now: time.Unix(t0, 0)}})
	if err := a.SetConfig(map[string]string{"stable-window": "6s", "scale-to-zero-grace-period": "4s"}); err != nil {
		t.Fatal(err)
	}
	log := logDecisions(a)
	if err := a.Upsert(hello, learnedAnnotations); err != nil {
		t.Fatal(err)
	}
	var restedSeconds, prewarms int
	for sec := int64(0); sec < 25*learnedTimer; sec++ {
		n := 0
		if len(p.scales) > 0 {
			n = int(p.scales[len(p.scales)-1])
		}
		p.setPods(hello, n) // the pods follow the scale at once
		busy := sec%learnedTimer == 0
		s.set(0, 0)
		if busy && n > 0 {
			s.set(1, 1)
		}
		stepTo(a, at(time.Duration(sec)*time.Second))
		if busy && n == 0 {
			a.deps.clock.(*fakeClock).set(at(time.Duration(sec)*time.Second + 100*time.Millisecond))
			if err := a.Ingest(load(hello.String(), 1, 0)); err != nil {
				t.Fatal(err)
			}
			drain(a)
		}
		if statusOf(t, a).Resting {
			restedSeconds++
		}
	}
	a.revisions[hello].closeRecording()
	for _, d := range log.decs {
		if slices.Contains(d.codes, string(decider.PreWarm)) {
			prewarms++
		}
	}
	if restedSeconds < 100 || prewarms < 5 {
		t.Errorf("rested %d seconds, %d pre-warms: want the revision to rest between requests and pre-warm for them", restedSeconds, prewarms)
	}
	data, err := os.ReadFile(filepath.Join(dir, "default_hello-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	scn, rev := parseRecording(t, data)
	replayed := map[int64]decider.Decision{}
	if err := scenario.Replay(scn, rev, func(l scenario.Line) error { replayed[l.T] = l.Decision; return nil }); err != nil {
		t.Fatal(err)
	}
	first := recordingOrigin(t, scn)
	live := map[int64]bool{}
	for _, d := range log.decs {
		live[d.at-first] = true
		want, ok := replayed[d.at-first]
		if !ok {
			t.Fatalf("live decision at t=%d not replayed", d.at-first)
		}
		if diff := cmp.Diff(shapeAt(&want, 0, false), shapeAt(&d.recorded, 0, false)); diff != "" {
			t.Fatalf("t=%d (-replay +live):\n%s", d.at-first, diff)
		}
	}
	skipped := 0
	for tick, d := range replayed {
		if live[tick] {
			continue
		}
		skipped++
		prev := previous(log.decs, first+tick)
		if diff := cmp.Diff(shapeAt(&prev.recorded, 0, true), shapeAt(&d, 0, true)); diff != "" {
			t.Fatalf("t=%d slept through, the replay decided otherwise (-live before +replay):\n%s", tick, diff)
		}
	}
	if skipped == 0 {
		t.Errorf("no decision slept through: the test shows nothing")
	}
}

// recordingOrigin is the unix second of a recording's t = 0, which its
// description names.
func recordingOrigin(t *testing.T, scn *scenario.Scenario) int64 {
	t.Helper()
	at, err := time.Parse(time.RFC3339, scn.Description[strings.LastIndex(scn.Description, " at ")+4:])
	if err != nil {
		t.Fatalf("the recording's description %q names no start: %v", scn.Description, err)
	}
	return at.Unix()
}

// previous is the last logged decision before second sec.
func previous(decs []loggedDecision, sec int64) loggedDecision {
	var p loggedDecision
	for _, d := range decs {
		if d.at < sec {
			p = d
		}
	}
	return p
}

// decisionShape is a decision for comparisons, with its reasons.
type decisionShape struct {
	At                                int64
	Recommended, Desired, EBC         int32
	Panic, Activator, AtZero, HasData bool
	State                             decider.State
	Stable, PanicAverage              float64
	Reasons                           []decider.Reason
}

// shapeAt is a decision for comparisons, at second at, without its
// reasons' numbers when rough.
func shapeAt(d *decider.Decision, at int64, rough bool) decisionShape {
	v := decisionShape{At: at, Recommended: d.Recommended, Desired: d.Desired, EBC: d.EBC, Panic: d.Panic,
		Activator: d.ActivatorInPath, AtZero: d.AtZero, HasData: d.HasData, State: d.State, Stable: d.Stable,
		PanicAverage: d.PanicAverage, Reasons: slices.Clone(d.Reasons())}
	if rough {
		for i := range v.Reasons {
			v.Reasons[i] = decider.RestoredReason(v.Reasons[i].Code, v.Reasons[i].Detail, [3]float64{})
		}
	}
	return v
}
