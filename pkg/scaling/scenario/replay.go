package scenario

import (
	"errors"
	"fmt"
	"time"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/decider"
)

// Epoch is the wall-clock time of t = 0 on the virtual clock: 2026-01-01
// UTC, an even unix second, so the scale-down delay's 2-second slots line
// up with t/2 as the spec says.
var Epoch = time.Unix(1_767_225_600, 0).UTC()

// at returns the virtual time of second t.
func at(t int64) time.Time { return Epoch.Add(time.Duration(t) * time.Second) }

// Line is one decision of a replay.
type Line struct {
	T        int64
	Decision decider.Decision
}

// ErrUnsupportedClass is returned for a revision whose class the replay
// cannot run.
var ErrUnsupportedClass = errors.New("unsupported autoscaler class")

// Replay runs the samples through a decider for rev on a virtual clock and
// calls emit for every decision, in order: at every multiple of the tick
// interval from the first sample's second to the last one's, and on a poke
// (a non-tick second whose sample has non-zero concurrency while the
// recommendation is exactly 0). It stops at the first error emit returns.
//
// rev comes from Scenario.Revision (or config.NewRevision). The KPA and HPA
// classes are supported; any other class is ErrUnsupportedClass.
func Replay(s *Scenario, rev *config.Revision, emit func(Line) error) error {
	if rev.Class != config.ClassKPA && rev.Class != config.ClassHPA {
		return fmt.Errorf("replaying with class %q: %w; use %q or %q", rev.Class, ErrUnsupportedClass, config.ClassKPA, config.ClassHPA)
	}
	first, last := s.Samples[0], s.Samples[len(s.Samples)-1]
	var ready int32
	if first.Ready != nil {
		ready = *first.Ready
	}
	st := decider.NewStepper(rev, decider.StepperOptions{First: at(first.T), Ready: ready, TickOrigin: Epoch, Inactive: s.StartInactive})
	next := 0
	var line Line // reused: a Decision is about 1 KiB
	for t := first.T; t <= last.T; t++ {
		var sec decider.Second
		if next < len(s.Samples) && s.Samples[next].T == t {
			smp := &s.Samples[next]
			next++
			sec = decider.Second{HasMetric: smp.HasMetric, Concurrency: smp.Concurrency, RPS: smp.RPS,
				Ready: smp.Ready, Reachable: smp.Reachable, Pods: smp.Pods}
		}
		if !st.StepInto(at(t), sec, &line.Decision) {
			continue
		}
		line.T = t
		if err := emit(line); err != nil {
			return err
		}
	}
	return nil
}
