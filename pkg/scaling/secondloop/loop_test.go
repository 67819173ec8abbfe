package secondloop

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/decider"
	"ebb.dev/ebb/pkg/stats"
)

// rev is Knative's defaults with short windows: a revision without load
// goes to zero 4 s after its last load.
func rev(t *testing.T) *config.Revision {
	t.Helper()
	as, err := config.NewAutoscalerFromMap(map[string]string{"stable-window": "6s", "scale-to-zero-grace-period": "4s", "tick-interval": "1s"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := config.NewRevision(as, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// sink records what a loop hands out.
type sink struct {
	rev     *config.Revision
	applied []int32 // every replica count applied, in order
	at      []int64 // the close each was applied at
	now     int64   // the second being closed
	final   map[int64]decider.Second
	finals  []int64
	decided map[int64]decider.Decision // the last decision of each second
}

func newSink(r *config.Revision) *sink {
	return &sink{rev: r, final: map[int64]decider.Second{}, decided: map[int64]decider.Decision{}}
}

func (s *sink) Start(sec int64, ready int32) *decider.Stepper {
	return decider.NewStepper(s.rev, decider.StepperOptions{First: time.Unix(sec, 0), Ready: ready})
}
func (s *sink) Decided(sec int64, d *decider.Decision, _ bool) { s.decided[sec] = *d }
func (s *sink) Apply(d *decider.Decision) bool {
	if n := len(s.applied); n == 0 || s.applied[n-1] != d.Desired {
		s.applied = append(s.applied, d.Desired)
		s.at = append(s.at, s.now)
	}
	return true
}
func (s *sink) Final(sec int64, in decider.Second) {
	if in.Ready != nil {
		r := *in.Ready
		in.Ready = &r
	}
	s.final[sec] = in
	s.finals = append(s.finals, sec)
}

// request is one activator report of load in second sec.
func request(sec int64) stats.Stat {
	return stats.Stat{Source: stats.SourceActivator, PodName: "act", Time: time.Unix(sec+1, 0),
		Period: time.Second, AverageConcurrency: 0.5, RequestCount: 1}
}

// run closes seconds 0..end of a revision with one ready replica whose
// only load is the activator's reports: busy in the first seconds, then
// one request in second req (its report delivered at the close of
// req+delay; 0: on time, -1: never). It returns what the sink saw.
func run(t *testing.T, req, delay, end int64, report stats.Stat) *sink {
	t.Helper()
	s := newSink(rev(t))
	var l Loop
	var in Inbox
	for sec := int64(0); sec <= end; sec++ {
		if sec < 3 {
			in.Add(request(sec), sec)
		}
		if sec == req && delay == 0 {
			in.Add(report, sec)
		}
		if delay > 0 && sec == req+delay {
			in.Add(report, req) // it arrives after req was closed
		}
		s.now = sec
		c := Closing{Sec: sec, Ready: 1}
		c.Reports, c.Late, _ = in.Take(sec, nil, nil)
		l.Close(&c, s)
	}
	return s
}

// TestLateReportPreventsTheZero: the zero decided in the second of a
// request whose report came late is held and re-decided with the report:
// the replica is never scaled to zero and started again. The decisions
// are those of the report on time, and the recorded seconds replay to
// them.
func TestLateReportPreventsTheZero(t *testing.T) {
	onTime := run(t, -1, -1, 30, stats.Stat{}) // when does it go to zero alone?
	zeroAt := int64(-1)
	for sec := int64(0); sec <= 30 && zeroAt < 0; sec++ {
		if d, ok := onTime.decided[sec]; ok && d.Desired == 0 {
			zeroAt = sec
		}
	}
	if zeroAt < 0 || !cmp.Equal(onTime.applied, []int32{1, 0}) {
		t.Fatalf("without the request: zero at %d, applied %v; want a zero, then nothing", zeroAt, onTime.applied)
	}
	want := run(t, zeroAt, 0, 30, request(zeroAt))
	for _, delay := range []int64{1, 2} {
		got := run(t, zeroAt, delay, 30, request(zeroAt))
		if !cmp.Equal(got.applied, want.applied) {
			t.Errorf("report %d closes late: applied %v, want %v (the report on time)", delay, got.applied, want.applied)
		}
		if diff := cmp.Diff(want.decided, got.decided, cmp.AllowUnexported(decider.Decision{})); diff != "" {
			t.Errorf("report %d closes late: decisions unlike those of the report on time (-want +got):\n%s", delay, diff)
		}
		if diff := cmp.Diff(want.final, got.final); diff != "" {
			t.Errorf("report %d closes late: final seconds (-want +got):\n%s", delay, diff)
		}
	}
	// The zero then happens later, once, as with the report on time.
	if n := len(want.applied); want.applied[n-1] != 0 || n != 2 {
		t.Errorf("with the request: applied %v, want 1 then 0 later", want.applied)
	}
}

// zeroSecond is the second the revision of run decides its zero without
// the request.
func zeroSecond(t *testing.T) int64 {
	t.Helper()
	s := run(t, -1, -1, 30, stats.Stat{})
	for sec := int64(0); sec <= 30; sec++ {
		if d, ok := s.decided[sec]; ok && d.Desired == 0 {
			return sec
		}
	}
	t.Fatal("no zero without load")
	return 0
}

// TestHeldZeroAppliesAfterTheBound: a zero is applied LateBound closes
// after its second, also when a late report of that second carries
// nothing (it re-decides to the same zero); every second is final once,
// in order.
func TestHeldZeroAppliesAfterTheBound(t *testing.T) {
	z := zeroSecond(t)
	empty := stats.Stat{Source: stats.SourceActivator, PodName: "act", Time: time.Unix(z+1, 0), Period: time.Second}
	for name, s := range map[string]*sink{"no report": run(t, -1, -1, 30, stats.Stat{}), "an empty late report": run(t, z, 1, 30, empty)} {
		if !cmp.Equal(s.applied, []int32{1, 0}) || s.at[1] != z+LateBound {
			t.Errorf("%s: applied %v at %v; want 0 at the close of %d (decided at %d)", name, s.applied, s.at, z+LateBound, z)
		}
		for i, sec := range s.finals {
			if sec != int64(i) {
				t.Fatalf("%s: final seconds %v, want 0, 1, 2... once each", name, s.finals)
			}
		}
	}
}

// TestReportLaterThanTheBound: a report that comes after the hold ended
// counts in the open second: the zero happened, and the load scales the
// revision up again (as every late report did before holds).
func TestReportLaterThanTheBound(t *testing.T) {
	z := zeroSecond(t)
	s := run(t, z, LateBound+1, 30, request(z))
	if len(s.applied) < 3 || !cmp.Equal(s.applied[:3], []int32{1, 0, 1}) || s.at[2] != z+LateBound+1 {
		t.Errorf("applied %v at %v; want 1, 0 at %d, 1 at %d", s.applied, s.at, z+LateBound, z+LateBound+1)
	}
}

func TestSecondOf(t *testing.T) {
	phase := 300 * time.Millisecond
	for _, c := range []struct {
		cut  time.Time
		want int64
	}{
		{time.Unix(10, 0), 9},                            // a window cut at the end of 9
		{time.Unix(10, int64(700*time.Millisecond)), 10}, // before 10's close at 11.3
		{time.Unix(11, int64(300*time.Millisecond)), 10}, // at 10's close
		{time.Unix(11, int64(301*time.Millisecond)), 11},
	} {
		if got := SecondOf(c.cut, phase); got != c.want {
			t.Errorf("SecondOf(%v, %v) = %d, want %d", c.cut, phase, got, c.want)
		}
	}
	if SecondOf(time.Time{}, phase) != Open {
		t.Error("a report without a time is late")
	}
}

// TestInboxSortsLateReports: a report of a closed second is late; the
// others (a later second, or no time) count in the next close.
func TestInboxSortsLateReports(t *testing.T) {
	var b Inbox
	st := func(pod string) stats.Stat { return stats.Stat{PodName: pod, Period: time.Second} }
	b.Add(st("a"), 5) // before any close: not late
	on, late, _ := b.Take(5, nil, nil)
	if len(on) != 1 || len(late) != 0 {
		t.Fatalf("first close: %d on time, %d late; want 1, 0", len(on), len(late))
	}
	b.Add(st("b"), 5)
	b.Add(st("c"), 6)
	b.Add(st("d"), Open)
	on, late, _ = b.Take(6, nil, nil)
	if len(on) != 2 || len(late) != 1 || late[0].Sec != 5 || late[0].Stat.PodName != "b" {
		t.Errorf("second close: on time %v, late %v; want c and d on time, b late of 5", on, late)
	}
	if b.Len() != 0 {
		t.Errorf("%d held after the take", b.Len())
	}
}
