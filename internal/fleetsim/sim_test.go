package fleetsim

import (
	"flag"
	"strings"
	"testing"
	"time"
)

// schedule is a named regression schedule: a case of issue 33's table.
type schedule struct {
	name string
	// want is what the rules before the fix got wrong (part of the
	// error of the Legacy run).
	want string
	run  func(s *Sim) time.Duration
}

var schedules = []schedule{
	{"rollout 10 to 20, an old replica paused 3 lease durations", "writers", func(s *Sim) time.Duration {
		s.Start("old-a", 10)
		s.AddActivator()
		s.At(30*time.Second, func() { s.Pause("old-a", 3*s.C.LeaseDuration) })
		s.At(31*time.Second, func() { s.Start("new-a", 20) })
		s.At(140*time.Second, func() { s.Stop("old-a") })
		return 180 * time.Second
	}},
	{"rollout 10 to 20, the new replica's watch stalled", "writers", func(s *Sim) time.Duration {
		s.Start("old-a", 10)
		s.AddActivator()
		s.At(30*time.Second, func() {
			s.Start("new-a", 20)
			s.Stall("new-a", 3*s.C.LeaseDuration)
		})
		s.At(120*time.Second, func() { s.Stop("old-a") })
		return 160 * time.Second
	}},
	{"buckets 20 to 10, an old pod SIGKILLed", "waits", func(s *Sim) time.Duration {
		s.Start("old-a", 20)
		s.Start("old-b", 20)
		s.AddActivator()
		s.At(30*time.Second, func() { s.Start("new-a", 10) })
		s.At(35*time.Second, func() { s.Stop("old-a") })
		s.At(36*time.Second, func() { s.Kill("old-b") })
		s.At(40*time.Second, func() { s.Start("new-b", 10) })
		return 120 * time.Second
	}},
	{"rollout stalls with a new pod of another count, an old replica stops", "undecided", func(s *Sim) time.Duration {
		s.Start("old-a", 10)
		s.Start("old-b", 10)
		s.AddActivator()
		s.At(30*time.Second, func() { s.Start("stray", 20) })
		s.At(32*time.Second, func() { s.Kill("stray") }) // Pending after a crash: never back
		s.At(33*time.Second, func() { s.Stop("old-b") })
		s.At(34*time.Second, func() { s.Start("stray2", 20) })
		return 150 * time.Second
	}},
	{"a holder resumes after a pause", "writers", func(s *Sim) time.Duration {
		s.Start("a", 10)
		s.Start("b", 10)
		s.AddActivator()
		s.At(30*time.Second, func() { s.Pause("a", 2*s.C.LeaseDuration) })
		return 100 * time.Second
	}},
}

// TestRegressionSchedules: each fails with the rules before the fix and
// holds with them.
func TestRegressionSchedules(t *testing.T) {
	for _, sc := range schedules {
		t.Run(sc.name, func(t *testing.T) {
			for _, legacy := range []bool{true, false} {
				s := New(DefaultConfig(), 1)
				s.Legacy, s.Trace = legacy, true
				s.Run(sc.run(s))
				err := s.Err()
				switch {
				case legacy && (err == nil || !strings.Contains(err.Error(), sc.want)):
					t.Errorf("before the fix: %v, want an error naming %q", err, sc.want)
				case !legacy && err != nil:
					t.Errorf("%v\n%s", err, strings.Join(s.Log, "\n"))
				case legacy:
					t.Logf("before the fix: %v", err)
				default:
					t.Logf("longest undecided %v, longest report wait %v, %d reports taken", s.LongestUndecided, s.LongestReport, s.Taken)
				}
			}
		})
	}
}

// seeds is the random schedules each `go test` runs (-short: a tenth);
// -seeds runs more, and so does FuzzFleet.
var seeds = flag.Int("seeds", 60, "TestRandomSchedules: how many random schedules to run")

// TestRandomSchedules runs random fault schedules of four minutes each
// and reports the longest undecided span seen.
func TestRandomSchedules(t *testing.T) {
	n := *seeds
	if testing.Short() || raceDetector && !seedsSet() {
		n /= 6
	}
	var longest, report time.Duration
	past := 0
	c := DefaultConfig()
	for seed := range uint64(n) {
		s, end := Random(c, seed, 4*time.Minute)
		s.Run(end)
		if len(s.Violations) > 0 {
			t.Fatalf("seed %d: %v (replay: go test -run TestReplay -seed %d)", seed, s.Err(), seed)
		}
		if s.LongestUndecided > c.Bound() {
			past++
			t.Logf("seed %d: %v", seed, s.Err())
		}
		if s.LongestUndecided > 2*c.Bound() {
			t.Errorf("seed %d: a revision went undecided for %v, past twice the bound %v", seed, s.LongestUndecided, c.Bound())
		}
		longest, report = max(longest, s.LongestUndecided), max(report, s.LongestReport)
	}
	t.Logf("%d schedules: longest undecided %v (bound %v; past it in %d), longest report wait %v", n, longest, c.Bound(), past, report)
}

func seedsSet() bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "seeds" })
	return set
}

// FuzzFleet runs one random schedule per input.
func FuzzFleet(f *testing.F) {
	f.Add(uint64(0))
	f.Add(uint64(12345))
	f.Fuzz(func(t *testing.T, seed uint64) {
		s, end := Random(DefaultConfig(), seed, 4*time.Minute)
		s.Run(end)
		if len(s.Violations) > 0 || s.LongestUndecided > 2*s.C.Bound() {
			t.Fatalf("seed %d: %v", seed, s.Err())
		}
	})
}

var replaySeed = flag.Int64("seed", -1, "TestReplay: the seed of the random schedule to replay with its trace")

// TestReplay replays one random schedule with its trace (-seed).
func TestReplay(t *testing.T) {
	if *replaySeed < 0 {
		t.Skip("no -seed")
	}
	s, end := Random(DefaultConfig(), uint64(*replaySeed), 4*time.Minute)
	s.Trace = true
	s.Run(end)
	t.Log("\n" + strings.Join(s.Log, "\n"))
	if err := s.Err(); err != nil {
		t.Error(err)
	}
}
