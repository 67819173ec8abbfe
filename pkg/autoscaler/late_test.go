package autoscaler

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/scaling/decider"
	"ebb.dev/ebb/pkg/scaling/scenario"
	"ebb.dev/ebb/pkg/scaling/secondloop"
	"ebb.dev/ebb/pkg/stats"
)

// timedPlatform is a fakePlatform that notes when each scale was asked.
type timedPlatform struct {
	*fakePlatform
	clock *fakeClock
	mu    sync.Mutex
	at    []time.Duration // since t0
}

func (p *timedPlatform) Scale(ctx context.Context, key RevisionKey, n int32) error {
	p.mu.Lock()
	p.at = append(p.at, p.clock.Now().Sub(time.Unix(t0, 0)))
	p.mu.Unlock()
	return p.fakePlatform.Scale(ctx, key, n)
}

// lateRun is what one run of runLate saw.
type lateRun struct {
	scales  []int32
	at      []time.Duration
	decided map[int64]decider.Decision // the last decision of each second
}

// activatorReport is the activator's window of second sec (cut at its
// end), with conc requests in flight on average.
func activatorReport(sec int64, conc float64) stats.Stat {
	return stats.Stat{Source: stats.SourceActivator, PodName: "activator-a", Revision: hello.String(),
		Time: time.Unix(sec+1, 0), Period: time.Second, AverageConcurrency: conc, RequestCount: uint64(conc)}
}

// runLate runs hello with one ready pod whose load the activator reports
// (the pods' scrapes say 0): busy in its first 3 seconds, idle after, and,
// when late.Period is set, the report late delivered at t0+deliver
// (its own second by its time). It steps the schedule every 100 ms for
// 40 s.
func runLate(t *testing.T, late stats.Stat, deliver time.Duration) lateRun {
	t.Helper()
	return runLateRecorded(t, late, deliver, "")
}

// runLateRecorded is runLate recording into dir (none when "").
func runLateRecorded(t *testing.T, late stats.Stat, deliver time.Duration, dir string) lateRun {
	t.Helper()
	a, cp, s := newScheduled(t, nil)
	a.deps.recordDir = dir
	p := &timedPlatform{fakePlatform: cp.fakePlatform, clock: a.deps.clock.(*fakeClock)}
	a.deps.platform = p
	log := logDecisions(a)
	p.setPods(hello, 1)
	s.set(0, 0)
	if err := a.Upsert(hello, nil); err != nil {
		t.Fatal(err)
	}
	ingest := func(st stats.Stat) {
		if err := a.Ingest(st); err != nil {
			t.Fatal(err)
		}
		drain(a)
	}
	for now := time.Duration(0); now <= 40*time.Second; now += 100 * time.Millisecond {
		stepTo(a, at(now))
		if sec := int64(now / time.Second); now%time.Second == 0 && sec >= 1 && sec <= 3 {
			ingest(activatorReport(t0+sec-1, 1)) // on time: before the close at the revision's phase
		}
		if late.Period != 0 && now == deliver {
			ingest(late)
		}
	}
	a.Delete(hello) // closes the recording
	run := lateRun{scales: p.scales, at: p.at, decided: map[int64]decider.Decision{}}
	for _, d := range log.decs {
		run.decided[d.at] = d.recorded
	}
	return run
}

// zeroOfLate is the second hello decides its zero in when nothing comes
// after its first seconds.
func zeroOfLate(t *testing.T) int64 {
	t.Helper()
	run := runLate(t, stats.Stat{}, 0)
	for sec := t0; sec < t0+40; sec++ {
		if d, ok := run.decided[sec]; ok && d.Desired == 0 {
			return sec
		}
	}
	t.Fatalf("hello never decided a zero: %v", run.scales)
	return 0
}

// TestLateReportNoScaleToZero: a request comes in the second the revision
// would scale to zero, and the activator's report of that second reaches
// the autoscaler 500 ms or 1.5 s after the revision closed it. The zero
// is held (secondloop.LateBound closes) and decided again with the report:
// the revision is never scaled to zero and started again, and the
// decisions and scales are those of the report on time.
func TestLateReportNoScaleToZero(t *testing.T) {
	z := zeroOfLate(t)
	phase := time.Duration(phaseOf(keyHash(hello))) * phaseStep
	closeOfZ := time.Duration(z-t0+1)*time.Second + phase
	report := activatorReport(z, 1)
	onTime := runLate(t, report, closeOfZ-phase) // at the second's end, before its close
	t.Logf("zero decided at %d without the request; with it, on time: scales %v at %v", z-t0, onTime.scales, onTime.at)
	if n := len(onTime.scales); n != 2 || onTime.scales[1] != 0 || onTime.at[1] <= closeOfZ+2*time.Second {
		t.Fatalf("the request on time: scales %v at %v; want a later zero, and no other", onTime.scales, onTime.at)
	}
	for _, delay := range []time.Duration{500 * time.Millisecond, 1500 * time.Millisecond} {
		got := runLate(t, report, (closeOfZ + delay).Round(100*time.Millisecond))
		if diff := cmp.Diff(onTime.scales, got.scales); diff != "" {
			t.Errorf("report %v late: scales (-on time +late):\n%s", delay, diff)
		}
		if diff := cmp.Diff(onTime.decided, got.decided, cmp.AllowUnexported(decider.Decision{})); diff != "" {
			t.Errorf("report %v late: the last decision of each second (-on time +late):\n%s", delay, diff)
		}
		for i := 1; i < len(got.scales); i++ {
			if got.scales[i-1] == 0 && got.scales[i] > 0 {
				t.Errorf("report %v late: scaled to zero and up again (%v at %v)", delay, got.scales, got.at)
			}
		}
	}
}

// TestLateEmptyReportAndTooLate: a late report that carries nothing
// changes nothing, and the zero applies at the close secondloop.LateBound
// seconds after the second that decided it; a report later than that
// counts in the open second: the zero happened, and the load scales the
// revision up again.
func TestLateEmptyReportAndTooLate(t *testing.T) {
	z := zeroOfLate(t)
	phase := time.Duration(phaseOf(keyHash(hello))) * phaseStep
	closeOf := func(sec int64) time.Duration { return time.Duration(sec-t0+1)*time.Second + phase }
	empty := activatorReport(z, 0)
	got := runLate(t, empty, (closeOf(z) + 500*time.Millisecond).Round(100*time.Millisecond))
	zeroAt := -time.Duration(1)
	for i, s := range got.scales {
		if s == 0 {
			zeroAt = got.at[i]
			break
		}
	}
	if want := closeOf(z + secondloop.LateBound); zeroAt != want {
		t.Errorf("scales %v at %v: want the zero at the close of %d (%v; decided at %d)", got.scales, got.at, z+secondloop.LateBound-t0, want, z-t0)
	}
	tooLate := runLate(t, activatorReport(z, 1), (closeOf(z+secondloop.LateBound) + 100*time.Millisecond).Round(100*time.Millisecond))
	if len(tooLate.scales) < 3 || !cmp.Equal(tooLate.scales[:3], []int32{1, 0, 1}) || tooLate.at[1] != closeOf(z+secondloop.LateBound) {
		t.Errorf("a report later than the bound: scales %v at %v; want a zero, then 1 again", tooLate.scales, tooLate.at)
	}
}

// TestLateReportsRecordingReplays: the recording of a live run whose
// reports came late (and re-decided a held zero) replays through
// `autoscaler simulate` to the live decisions, bit for bit: each second's
// last decision, every field and reason. The recording holds each second
// as it was final, the late report in its own second.
func TestLateReportsRecordingReplays(t *testing.T) {
	z := zeroOfLate(t)
	phase := time.Duration(phaseOf(keyHash(hello))) * phaseStep
	closeOfZ := time.Duration(z-t0+1)*time.Second + phase
	for _, delay := range []time.Duration{500 * time.Millisecond, 1500 * time.Millisecond} {
		dir := t.TempDir()
		live := runLateRecorded(t, activatorReport(z, 1), (closeOfZ + delay).Round(100*time.Millisecond), dir)
		data, err := os.ReadFile(filepath.Join(dir, "default_hello-1.json"))
		if err != nil {
			t.Fatal(err)
		}
		scn, rev := parseRecording(t, data)
		origin := recordingOrigin(t, scn)
		type shaped struct {
			Recommended, Desired, EBC int32
			Panic, Activator, AtZero  bool
			State                     decider.State
			Reasons                   []decider.Reason
		}
		shape := func(d *decider.Decision) shaped {
			return shaped{d.Recommended, d.Desired, d.EBC, d.Panic, d.ActivatorInPath, d.AtZero, d.State, d.Reasons()}
		}
		want, got := map[int64]shaped{}, map[int64]shaped{}
		for sec, d := range live.decided {
			want[sec-origin] = shape(&d)
		}
		err = scenario.Replay(scn, rev, func(l scenario.Line) error {
			got[l.T] = shape(&l.Decision)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("report %v late: replayed decisions (-live +replay):\n%s", delay, diff)
		}
	}
}

// TestHeldZeroWithoutReadyPods: a revision whose pods went away when its
// zero was decided does not rest while the zero is held (a resting
// revision closes no second, and the zero would never apply): the zero
// applies at the close LateBound seconds on, and it rests after.
func TestHeldZeroWithoutReadyPods(t *testing.T) {
	z := zeroOfLate(t)
	a, cp, s := newScheduled(t, nil)
	p := &timedPlatform{fakePlatform: cp.fakePlatform, clock: a.deps.clock.(*fakeClock)}
	a.deps.platform = p
	p.setPods(hello, 1)
	s.set(0, 0)
	if err := a.Upsert(hello, nil); err != nil {
		t.Fatal(err)
	}
	for now := time.Duration(0); now <= 40*time.Second; now += 100 * time.Millisecond {
		stepTo(a, at(now))
		if sec := int64(now / time.Second); now%time.Second == 0 && sec >= 1 && sec <= 3 {
			if err := a.Ingest(activatorReport(t0+sec-1, 1)); err != nil {
				t.Fatal(err)
			}
			drain(a)
		}
		if now == time.Duration(z-t0)*time.Second {
			p.setPods(hello, 0) // gone before the close that decides the zero
		}
	}
	t.Logf("zero at %d; scales %v at %v", z-t0, p.scales, p.at)
	if n := len(p.scales); n == 0 || p.scales[n-1] != 0 {
		t.Fatalf("scales %v at %v: want the held zero applied", p.scales, p.at)
	}
	if st := statusOf(t, a); !st.Resting {
		t.Errorf("status %+v: want resting once the zero applied", st)
	}
}
