package decider

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/config"
)

// restTraffic is a trace of concurrency per second: bursts of load between
// idle gaps, most of them a timer's (period, give or take a second), some
// long and random, so that the learned policy learns the timer and
// pre-warms for it.
func restTraffic(seed uint64, seconds int, period int) []float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]float64, seconds)
	for t := 0; t < seconds; {
		for range 1 + rng.IntN(4) { // a burst
			if t < seconds {
				out[t] = float64(1 + rng.IntN(150))
			}
			t++
		}
		gap := period - 1 + rng.IntN(3)
		if rng.IntN(5) == 0 {
			gap = 60 + rng.IntN(900)
		}
		t += gap
	}
	return out
}

// restVariants are revisions that reach rest in different ways (Knative's
// scale to zero, the learned policy's release, an initial scale of 0) and
// one that never rests (min-scale 1).
func restVariants() map[string]*config.Revision {
	base := func() *config.Revision {
		r := knativeDefaults()
		r.StableWindow, r.PanicWindow = 6*time.Second, time.Second
		r.ScaleToZeroGracePeriod, r.ProgressDeadline = 4*time.Second, 20*time.Second
		return r
	}
	v := map[string]*config.Revision{}
	v["knative"] = base()
	r := base()
	r.ScaleDownDelay, r.ScaleToZeroPodRetentionPeriod = 8*time.Second, 10*time.Second
	v["delay and retention"] = r
	r = base()
	r.TickInterval = 3 * time.Second
	r.InitialScale, r.InitialReplicas = 0, 0
	v["initial scale 0, 3s tick"] = r
	for _, lead := range []time.Duration{2 * time.Second, 10 * time.Second, config.PrewarmLeadAuto} {
		r = base()
		r.ScaleToZeroPolicy = config.ScaleToZeroLearned
		r.ColdStartCost, r.PrewarmLead = 2*time.Minute, lead
		name := "learned, lead " + lead.String()
		if lead == config.PrewarmLeadAuto {
			name = "learned, lead auto (learned from start-ups)"
		}
		v[name] = r
	}
	r = base()
	r.MinScale = 1
	v["min-scale 1"] = r
	return v
}

// TestRestSkipsNothingThatMatters pits a stepper that skips the seconds it
// rests through against one that steps every second, on the same traffic
// and the same ready pods (the desired count a second later): every
// decision the resting one makes is the other's at that second, and every
// decision it skipped is its last one again, the reasons' numbers aside.
func TestRestSkipsNothingThatMatters(t *testing.T) {
	for name, rev := range restVariants() {
		for seed := range uint64(4) {
			t.Run(name, func(t *testing.T) {
				rested, prewarms := checkRest(t, rev, restTraffic(seed, 4000, 40))
				if rev.ScaleToZeroPolicy == config.ScaleToZeroLearned && prewarms == 0 {
					t.Errorf("no pre-warm from rest: the test shows nothing of the wake")
				}
				if rev.MinScale == 0 && rested == 0 {
					t.Errorf("never at rest: the test shows nothing")
				}
				if rev.MinScale > 0 && rested > 0 {
					t.Errorf("rested %d seconds at min-scale %d", rested, rev.MinScale)
				}
			})
		}
	}
}

// checkRest runs the two steppers and returns the seconds skipped. The
// pods are ready a second after they are wanted.
func checkRest(t *testing.T, rev *config.Revision, load []float64) (skipped, prewarms int) {
	t.Helper()
	zero := int32(0)
	every := NewStepper(rev, StepperOptions{First: at(0), Ready: 0})
	resting := NewStepper(rev, StepperOptions{First: at(0), Ready: 0})
	var last Decision  // the resting stepper's last decision
	var wake time.Time // while at rest: when to step again (zero: on input only)
	atRest := false    // the resting stepper skips seconds without input
	ready, next := int32(0), int32(0)
	for s, conc := range load {
		now := at(int64(s))
		in := Second{}
		if s == 0 {
			in.Ready = &zero
		}
		if ready != next {
			ready = next
			in.Ready = &ready
		}
		if conc > 0 || ready > 0 { // ready pods are scraped; at zero only the activator reports load
			in.HasMetric, in.Concurrency = true, conc
		}
		want, decided := every.Step(now, in)
		if decided {
			next = want.Desired
		}
		input := in.HasMetric || in.Ready != nil
		if atRest && !input && (wake.IsZero() || now.Before(wake)) {
			skipped++
			if decided {
				if diff := cmp.Diff(shape(&last), shape(&want)); diff != "" {
					t.Fatalf("second %d, skipped at rest: the stepper that stepped it decided otherwise (-rest +every):\n%s", s, diff)
				}
			}
			continue
		}
		got, ok := resting.Step(now, in)
		if ok != decided {
			t.Fatalf("second %d: resting stepper decided %v, the other %v", s, ok, decided)
		}
		if !ok {
			continue
		}
		if diff := cmp.Diff(view(&want), view(&got)); diff != "" {
			t.Fatalf("second %d after rest (-every +resting):\n%s", s, diff)
		}
		if atRest && slices.ContainsFunc(got.Reasons(), func(r Reason) bool { return r.Code == PreWarm }) {
			prewarms++
		}
		last = got
		if wake, atRest = resting.Rest(&got); atRest {
			resting.Trim(now) // what the live autoscaler does before it sleeps
		}
	}
	return skipped, prewarms
}

// decisionView is a Decision with its reasons, for comparisons.
type decisionView struct {
	At                             time.Time
	Recommended, Desired, EBC      int32
	Panic, Activator, AtZero, Data bool
	State                          State
	Stable, PanicAverage           float64
	Reasons                        []Reason
}

func view(d *Decision) decisionView {
	return decisionView{At: d.At, Recommended: d.Recommended, Desired: d.Desired, EBC: d.EBC, Panic: d.Panic,
		Activator: d.ActivatorInPath, AtZero: d.AtZero, Data: d.HasData, State: d.State, Stable: d.Stable,
		PanicAverage: d.PanicAverage, Reasons: append([]Reason(nil), d.Reasons()...)}
}

// shape is a decision without its time and its reasons' numbers.
func shape(d *Decision) decisionView {
	v := view(d)
	v.At = time.Time{}
	for i := range v.Reasons {
		v.Reasons[i].values = [3]float64{}
	}
	return v
}

func TestRestNeedsAQuietDecision(t *testing.T) {
	rev := knativeDefaults()
	rest := func(mut func(*Decision), ready int32) bool {
		s := NewStepper(rev, StepperOptions{First: at(0), Ready: ready})
		d := Decision{At: at(10), State: inactive, ActivatorInPath: true, AtZero: true}
		d.add(noDataReason())
		d.add(scaledToZeroReason(40, 40))
		d.add(activatorNoReadyPodsReason())
		mut(&d)
		_, ok := s.Rest(&d)
		return ok
	}
	tests := []struct {
		name  string
		mut   func(*Decision)
		ready int32
		want  bool
	}{
		{"at zero", func(*Decision) {}, 0, true},
		{"a pod ready", func(*Decision) {}, 1, false},
		{"data in the window", func(d *Decision) { d.HasData = true }, 0, false},
		{"a replica wanted", func(d *Decision) { d.Desired = 1 }, 0, false},
		{"activating", func(d *Decision) { d.State = activating }, 0, false},
		{"activator out of the path", func(d *Decision) { d.ActivatorInPath = false }, 0, false},
		{"a state change", func(d *Decision) { d.add(stateChangedReason(inactive, "")) }, 0, false},
		{"a grace period running", func(d *Decision) { d.add(gracePeriodReason(1, 30)) }, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rest(tt.mut, tt.ready); got != tt.want {
				t.Errorf("Rest = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRestWakesForThePreWarm(t *testing.T) {
	rev := learnedRevision() // a 10s lead
	s := NewStepper(rev, StepperOptions{First: at(0), Ready: 0})
	d := Decision{At: at(100), State: inactive, ActivatorInPath: true, AtZero: true}
	d.add(noDataReason())
	d.add(learnedReleaseReason(25, 3, 9, ""))
	d.add(activatorNoReadyPodsReason())
	if wake, ok := s.Rest(&d); !ok || !wake.Equal(at(115)) {
		t.Errorf("Rest = %v, %v: want a wake at 115 (the range worth a replica in 25s, less the 10s lead)", wake, ok)
	}
	d.reasons[1].values[0] = -1
	if wake, ok := s.Rest(&d); !ok || !wake.IsZero() {
		t.Errorf("Rest = %v, %v: want no wake (no range worth a replica ahead)", wake, ok)
	}
}

func TestLastTick(t *testing.T) {
	rev := knativeDefaults()
	rev.TickInterval = 3 * time.Second
	s := NewStepper(rev, StepperOptions{First: at(10)})
	for _, tt := range []struct{ t, want int64 }{{10, 10}, {11, 10}, {12, 10}, {13, 13}, {9, 7}, {100, 100}} {
		if got := s.LastTick(at(tt.t)); !got.Equal(at(tt.want)) {
			t.Errorf("LastTick(%d) = %v, want %d", tt.t, got.Sub(epoch), tt.want)
		}
	}
}
