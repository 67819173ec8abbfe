package decider

import (
	"strings"
	"testing"
	"time"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/learned"
)

// parkTrace steps a timer revision (one second of load every period
// seconds) whose replicas are ready as soon as asked, and returns its
// decisions by second.
func parkTrace(t *testing.T, rev *config.Revision, period, rounds int64) map[int64]Decision {
	t.Helper()
	st := NewStepper(rev, StepperOptions{First: at(0), Ready: 1})
	ready := int32(1)
	out := map[int64]Decision{}
	var dec Decision
	for s := int64(0); s < period*rounds; s++ {
		conc := 0.0
		if s%period == 0 {
			conc = 1
		}
		r := ready
		if !st.StepInto(at(s), Second{HasMetric: ready > 0 || conc > 0, Concurrency: conc, RPS: conc, Ready: &r}, &dec) {
			continue
		}
		if dec.Parked && dec.Desired != 1 {
			t.Fatalf("second %d: parked with desired %d", s, dec.Desired)
		}
		for _, rs := range dec.Reasons() {
			if m := rs.Message(); m == "" || m == string(rs.Code) {
				t.Errorf("reason %s has no sentence", rs.Code)
			}
		}
		ready = dec.Desired
		out[s] = dec
	}
	return out
}

func codesOf(d Decision) []Code {
	var cs []Code
	for _, r := range d.Reasons() {
		cs = append(cs, r.Code)
	}
	return cs
}

// TestLearnedParks: with parking, the learned policy parks the replica it
// releases (the next request, 300s away, costs 30 parked replica-seconds
// at 0.1, less than a 2-minute cold start), keeps it parked where it
// would pre-warm, and the next request wakes it; the revision never goes
// to zero.
func TestLearnedParks(t *testing.T) {
	rev := learnedRevision()
	rev.Parking = config.Parking{Enabled: true, CPURequestMilli: 1, MemoryRequestBytes: 16 << 20, Cost: 0.1}
	decs := parkTrace(t, rev, 300, 15)
	parked, woken := 0, 0
	for s := int64(300*13 + 2); s < 300*14+10; s++ {
		d, ok := decs[s]
		if !ok {
			continue
		}
		if d.Desired == 0 {
			t.Fatalf("second %d: desired 0 (%v); want the replica parked", s, codesOf(d))
		}
		if d.Parked {
			parked++
		}
		if hasCodeIn(codesOf(d), Unparked) {
			woken++
		}
	}
	d := decs[300*13+200]
	if !d.Parked || !hasCodeIn(codesOf(d), Parked) || !d.ActivatorInPath || !d.AtZero {
		t.Errorf("mid-gap: parked %v, activator %v, atZero %v, reasons %v; want parked with the activator in the path and pokes on",
			d.Parked, d.ActivatorInPath, d.AtZero, codesOf(d))
	}
	kept := ""
	for _, r := range d.Reasons() {
		if r.Code == KeepAlive {
			kept = r.Message()
		}
	}
	if !strings.Contains(kept, "parked, the time the rest of the gap is expected to take costs less than the cold start it spares") {
		t.Errorf("mid-gap: KeepAlive says %q; want it kept for a parked replica, with why", kept)
	}
	if parked < 100 || woken != 1 {
		t.Errorf("%d parked decisions and %d wakes in the round; want most of the gap parked and one wake", parked, woken)
	}
	if s := decs[300*14]; s.Parked || s.Desired != 1 {
		t.Errorf("the request's second: parked %v, desired %d; want awake at 1", s.Parked, s.Desired)
	}
}

// TestLearnedDeclinesPark: at parked-cost 1, parking through a 300s gap
// costs more than a 2-minute cold start: the policy releases to zero and
// says why.
func TestLearnedDeclinesPark(t *testing.T) {
	rev := learnedRevision()
	rev.Parking = config.Parking{Enabled: true, CPURequestMilli: 1, MemoryRequestBytes: 16 << 20, Cost: 1}
	decs := parkTrace(t, rev, 300, 15)
	declined := 0
	for s := int64(300*13 + 2); s < 300*13+120; s++ { // (later, a pre-warmed replica's short wait is worth parking)
		d, ok := decs[s]
		if !ok {
			continue
		}
		if d.Parked {
			t.Fatalf("second %d: parked (%v); want released to zero", s, codesOf(d))
		}
		for _, r := range d.Reasons() {
			if r.Code != ParkDeclined {
				continue
			}
			declined++
			if d.Desired != 0 || !strings.Contains(r.Message(), "costs more than a cold start") {
				t.Errorf("second %d: desired %d, ParkDeclined says %q", s, d.Desired, r.Message())
			}
		}
	}
	if declined == 0 {
		t.Error("no ParkDeclined in the round")
	}
}

// TestParkNeverStartsAReplica: a revision that starts at zero stays there
// with parking on, and one whose pod is not ready when it would go to
// zero goes to zero: parking keeps a replica that runs.
func TestParkNeverStartsAReplica(t *testing.T) {
	rev := knativeDefaults()
	rev.Parking = config.Parking{Enabled: true, CPURequestMilli: 1, MemoryRequestBytes: 16 << 20, MaxDuration: time.Hour, Cost: 0.1}
	st := NewStepper(rev, StepperOptions{First: at(0), Inactive: true})
	for s := int64(0); s < 120; s++ {
		if dec, ok := st.Step(at(s), Second{}); ok && (dec.Desired != 0 || dec.Parked) {
			t.Fatalf("second %d: desired %d, parked %v; want 0 at zero", s, dec.Desired, dec.Parked)
		}
	}
	st = NewStepper(rev, StepperOptions{First: at(0), Ready: 1})
	zero := int32(0)
	for s := int64(0); s < 200; s++ {
		in := Second{HasMetric: true, Concurrency: 0}
		if s < 10 {
			in.Concurrency = 5
		}
		if s == 10 {
			in.Ready = &zero // the pod is gone as the load ends, before it could be parked
		}
		if dec, ok := st.Step(at(s), in); ok && dec.Parked {
			t.Fatalf("second %d: parked with no ready pod (%v)", s, codesOf(dec))
		}
	}
}

func TestParkMessages(t *testing.T) {
	tests := []struct {
		r    Reason
		want string
	}{
		{parkedReason(30, -1), "parked for 30s"},
		{parkedReason(30, 90), "1m30s before it goes to zero"},
		{parkExpiredReason(3600, 3600), "max-parked-duration (1h0m0s): scaled to zero"},
		{parkExpiredAwakeReason(30, 30), "max-parked-duration (30s): no longer parked; awake while the reasons after this keep it"},
		{unparkedReason(12), "parked for 12s"},
		{parkDeclinedReason(-1, 0, 0), "expects no request"},
	}
	for _, tt := range tests {
		if got := tt.r.Message(); !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want it to contain %q", tt.r.Code, got, tt.want)
		}
	}
}

// TestRefuseParking: a parked revision whose platform refuses parking is
// unparked at the next decision, is not parked again, and goes to zero by
// Knative's rules.
func TestRefuseParking(t *testing.T) {
	rev := knativeDefaults()
	rev.Parking = config.Parking{Enabled: true, CPURequestMilli: 1, MemoryRequestBytes: 16 << 20, Cost: 0.1}
	st := NewStepper(rev, StepperOptions{First: at(0), Ready: 1})
	var parkedAt int64 = -1
	var last Decision
	for s := int64(0); s < 300; s++ {
		in := Second{HasMetric: true}
		if s < 10 {
			in.Concurrency = 5
		}
		dec, ok := st.Step(at(s), in)
		if !ok {
			continue
		}
		switch {
		case parkedAt < 0 && dec.Parked:
			parkedAt = s
			st.Decider().RefuseParking()
		case parkedAt >= 0 && s == parkedAt+2:
			if dec.Parked || !hasCodeIn(codesOf(dec), ParkRefused) {
				t.Fatalf("second %d: parked %v, desired %d, reasons %v; want unparked with ParkRefused", s, dec.Parked, dec.Desired, codesOf(dec))
			}
		case parkedAt >= 0 && s > parkedAt+2 && dec.Parked:
			t.Fatalf("second %d: parked again after the refusal", s)
		}
		last = dec
	}
	if parkedAt < 0 {
		t.Fatal("never parked")
	}
	if last.Desired != 0 {
		t.Errorf("desired %d at the end; want zero by Knative's rules after the refusal (%v)", last.Desired, codesOf(last))
	}
}

// TestLearnedRefusedWeighsAwake: once the platform refuses parking, the
// learned policy weighs an awake replica again: from the next gap on, a
// revision whose parking was refused decides as one without parking.
func TestLearnedRefusedWeighsAwake(t *testing.T) {
	run := func(parking bool) map[int64]int32 {
		rev := learnedRevision()
		if parking {
			rev.Parking = config.Parking{Enabled: true, CPURequestMilli: 1, MemoryRequestBytes: 16 << 20, Cost: 0.1}
		}
		st := NewStepper(rev, StepperOptions{First: at(0), Ready: 1})
		ready, out := int32(1), map[int64]int32{}
		var dec Decision
		for s := int64(0); s < 300*15; s++ {
			conc := 0.0
			if s%300 == 0 {
				conc = 1
			}
			if parking && s == 300*10+1 {
				st.Decider().RefuseParking()
			}
			r := ready
			if st.StepInto(at(s), Second{HasMetric: ready > 0 || conc > 0, Concurrency: conc, RPS: conc, Ready: &r}, &dec) {
				ready = dec.Desired
				out[s] = dec.Desired
			}
		}
		return out
	}
	with, without := run(true), run(false)
	differ := 0
	for s := int64(300 * 8); s < 300*10; s++ {
		if with[s] != without[s] {
			differ++
		}
	}
	if differ == 0 {
		t.Error("parking changed no decision before the refusal; want the parked replica kept where the awake one is not")
	}
	for s := int64(300*11 + 1); s < 300*15; s++ {
		if with[s] != without[s] {
			t.Fatalf("second %d: desired %d after the refusal, %d without parking", s, with[s], without[s])
		}
	}
}

// TestLearnedParksOnceAGapBegins: the learned policy with parking keeps a
// replica through a 20s timer's gaps; it parks it once the gap has begun
// (learned.MinGap seconds idle), not after the panic window (6s): an awake
// replica spares only the wake, at ten times a parked one's cost.
func TestLearnedParksOnceAGapBegins(t *testing.T) {
	rev := learnedRevision()
	rev.Parking = config.Parking{Enabled: true, CPURequestMilli: 1, MemoryRequestBytes: 16 << 20, Cost: 0.1}
	const period = 20
	decs := parkTrace(t, rev, period, 30)
	for round := int64(20); round < 29; round++ {
		first := int64(-1)
		for s := round * period; s < (round+1)*period; s++ {
			if d, ok := decs[s]; ok && d.Parked {
				first = s - round*period
				break
			}
		}
		if first < 0 || first > learned.MinGap+2 || first >= int64(rev.PanicWindow.Seconds()) {
			t.Errorf("round %d: first parked %ds after the request (-1: never); want within %ds (the gap begun and the next tick)",
				round, first, learned.MinGap+2)
		}
		if d := decs[round*period]; d.Parked || d.Desired != 1 {
			t.Errorf("round %d: the request's second parked %v, desired %d; want awake", round, d.Parked, d.Desired)
		}
	}
}
