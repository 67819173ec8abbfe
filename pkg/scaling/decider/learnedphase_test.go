package decider

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/config"
)

// TestPhaseReasons: a replica kept for a second of the minute says what
// it rests on.
func TestPhaseReasons(t *testing.T) {
	r := preWarmReason(12, 31, 32, detailPhase)
	want := "pre-warm: next request expected in about 12s, at the second of the minute at which 31 of the latest 32 idle gaps of 30s or more " +
		"ended: a replica is started ahead of it"
	if got := r.Message(); got != want || !RestedOnPhase(r) || RestedOnSequence(r) {
		t.Errorf("message %q (phase %v)\nwant %q", got, RestedOnPhase(r), want)
	}
	r.Code, r.Detail = KeepAlive, detailPhaseRestored
	if got := r.Message(); !RestedOnPhase(r) || got != "keep-alive: a request is expected within about 12s, at the second of the minute at which 31 of the "+
		"latest 32 idle gaps of 30s or more ended: the replica is kept (idle-gap history restored from before an autoscaler restart)" {
		t.Errorf("restored: %q", got)
	}
}

// TestLearnedLead: with prewarm-lead auto the lead is a tick plus the
// longest of the latest start-ups measured (10s before any); a replica
// released before it is ready is not measured; an explicit lead is kept;
// the start-ups outlive a restore.
func TestLearnedLead(t *testing.T) {
	rev := learnedRevision()
	rev.PrewarmLead, rev.TickInterval = config.PrewarmLeadAuto, 2*time.Second
	// The Stepper measures from the decisions and the ready counts.
	rev.PrewarmLead = config.PrewarmLeadAuto
	st := NewStepper(rev, StepperOptions{First: at(0), Ready: 0})
	zero, one := int32(0), int32(1)
	st.Step(at(0), Second{HasMetric: true, Concurrency: 1, RPS: 1, Ready: &zero}) // a poke at zero: a replica is asked for
	st.Step(at(1), Second{Ready: &zero})
	st.Step(at(2), Second{Ready: &zero})
	st.Step(at(3), Second{HasMetric: true, Ready: &one})
	d := st.Decider()
	if got := d.learned.Lead(); got != 2+3 {
		t.Errorf("Stepper: lead %d after a replica ready 3s after it was asked for, want 5", got)
	}
	blob, _ := d.LearnedState()
	again := New(rev, at(0), 0)
	if _, err := again.RestoreLearned(blob); err != nil {
		t.Fatal(err)
	}
	restored, _ := again.LearnedState()
	if diff := cmp.Diff(blob, restored); diff != "" || again.learned.Lead() != 5 {
		t.Errorf("restored start-ups (-want +got):\n%s lead %d", diff, again.learned.Lead())
	}
}
