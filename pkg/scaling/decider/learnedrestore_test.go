package decider

import (
	"errors"
	"strings"
	"testing"
)

// timerRounds steps a learned revision invoked for one second every 300 s
// from second from for rounds rounds, replicas ready as soon as asked, and
// returns the decisions by second.
func timerRounds(st *Stepper, from int64, rounds int) map[int64]*Decision {
	ready := int32(1)
	out := map[int64]*Decision{}
	for s := from; s < from+300*int64(rounds); s++ {
		conc := 0.0
		if s%300 == 0 {
			conc = 1
		}
		r := ready
		dec := &Decision{}
		if st.StepInto(at(s), Second{HasMetric: ready > 0 || conc > 0, Concurrency: conc, RPS: conc, Ready: &r}, dec) {
			ready = dec.Desired
			out[s] = dec
		}
	}
	return out
}

// TestLearnedRestore: a decider that learned a timer hands its state to a
// new one (an autoscaler restart); the new one releases and pre-warms
// from its first round, where a fresh one falls back to Knative's rules,
// and its reasons say that the history was restored until it has learned
// LearnedMinGaps gaps of its own.
func TestLearnedRestore(t *testing.T) {
	old := NewStepper(learnedRevision(), StepperOptions{First: at(0), Ready: 1})
	timerRounds(old, 0, 13)
	blob, gen := old.Decider().LearnedState()
	if gen != 12 {
		t.Errorf("generation %d after 12 gaps, want 12", gen)
	}
	restart := int64(300 * 13) // the 14th request is the new decider's first second
	fresh := NewStepper(learnedRevision(), StepperOptions{First: at(restart), Ready: 1})
	n, err := fresh.Decider().RestoreLearned(blob)
	if err != nil || n != 12 {
		t.Fatalf("restored %d gaps, %v; want 12", n, err)
	}
	decs := timerRounds(fresh, restart, 12)
	release := decs[restart+2]
	if release == nil || release.Desired != 0 || !hasReason(release, LearnedRelease, detailRestored) {
		t.Fatalf("first decision after the restore: %+v; want a LearnedRelease whose detail is %q", release, detailRestored)
	}
	for _, r := range release.Reasons() {
		if m := r.Message(); r.Code == LearnedRelease && !strings.Contains(m, "history restored") {
			t.Errorf("message %q: want it to say the history was restored", m)
		}
	}
	// The timer's requests come at second 0 of a minute: the replica is
	// kept for that second, and says the history is restored.
	if d := decs[restart+300-2]; d == nil || d.Desired != 1 || !hasReason(d, KeepAlive, detailPhaseRestored) {
		t.Errorf("2 s before the first request after the restore: %+v; want a pre-warmed replica (KeepAlive, %s)", d, detailPhaseRestored)
	}
	for _, r := range decs[restart+300-2].Reasons() {
		if m := r.Message(); r.Code == KeepAlive && !strings.Contains(m, "history restored") {
			t.Errorf("message %q: want it to say the history was restored", m)
		}
	}
	// The gap that spans the restore is not counted (the first request is
	// the decider's first load); 10 later ones end the "restored" detail.
	if _, gen := fresh.Decider().LearnedState(); gen != 11 {
		t.Errorf("generation %d after 12 requests, want 11 (the gap before the first spans the restore)", gen)
	}
	if d := decs[300*24+4]; d == nil || hasReason(d, LearnedRelease, detailRestored) || !hasReason(d, LearnedRelease, "") {
		t.Errorf("after 10 gaps of its own: %+v; want a LearnedRelease without the restored detail", d)
	}
}

// hasReason reports whether d has a reason code with that Detail ("" for
// any but DetailRestored).
func hasReason(d *Decision, code Code, detail string) bool {
	for _, r := range d.Reasons() {
		if r.Code == code && (r.Detail == detail || (detail == "" && r.Detail != detailRestored)) {
			return true
		}
	}
	return false
}

// TestLearnedRestoreRefused: a corrupt blob leaves the decider as new (it
// falls back to Knative's rules); the knative policy ignores blobs.
func TestLearnedRestoreRefused(t *testing.T) {
	d := New(learnedRevision(), at(0), 0)
	before, _ := d.LearnedState()
	if _, err := d.RestoreLearned([]byte("garbage")); !errors.Is(err, errLearnedStateCorrupt) {
		t.Errorf("garbage: %v, want ErrLearnedStateCorrupt", err)
	}
	if after, gen := d.LearnedState(); string(after) != string(before) || gen != 0 {
		t.Errorf("a refused blob changed the history: %x (generation %d), want %x", after, gen, before)
	}
	old := NewStepper(learnedRevision(), StepperOptions{First: at(0), Ready: 1})
	timerRounds(old, 0, 6)
	blob, _ := old.Decider().LearnedState()
	k := New(knativeDefaults(), at(0), 0)
	if n, err := k.RestoreLearned(blob); n != 0 || err != nil {
		t.Errorf("knative policy: %d, %v; want 0, nil", n, err)
	}
	if b, gen := k.LearnedState(); b != nil || gen != 0 {
		t.Errorf("knative policy state %v %d, want none", b, gen)
	}
}

// TestLearnedRestoreBeforeLoad: until the restored decider sees load, a
// running replica is left to Knative's rules (the traffic during the
// restart was not seen, so the idle time is unknown): no release.
func TestLearnedRestoreBeforeLoad(t *testing.T) {
	old := NewStepper(learnedRevision(), StepperOptions{First: at(0), Ready: 1})
	timerRounds(old, 0, 13)
	blob, _ := old.Decider().LearnedState()
	restart := int64(300*14 - 20)
	st := NewStepper(learnedRevision(), StepperOptions{First: at(restart), Ready: 1})
	if _, err := st.Decider().RestoreLearned(blob); err != nil {
		t.Fatal(err)
	}
	one := int32(1)
	for s := restart; s < restart+10; s++ {
		dec, ok := st.Step(at(s), Second{HasMetric: true, Ready: &one})
		if ok && (dec.Desired != 1 || hasReason(&dec, LearnedRelease, detailRestored)) {
			t.Errorf("second %d before any load: desired %d, %+v; want the replica kept by Knative's rules", s, dec.Desired, dec.Reasons())
		}
	}
}
