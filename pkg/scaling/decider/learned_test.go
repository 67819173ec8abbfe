package decider

import (
	"strings"
	"testing"
	"time"

	"ebb.dev/ebb/pkg/config"
)

func learnedRevision() *config.Revision {
	rev := knativeDefaults()
	rev.ScaleToZeroPolicy = config.ScaleToZeroLearned
	rev.ColdStartCost, rev.PrewarmLead = 2*time.Minute, 10*time.Second
	return rev
}

// TestLearnedTimer drives a revision invoked for one second every 300 s,
// with replicas ready as soon as asked: with too little history it behaves
// as Knative's policy (and says so); once it has seen enough gaps it
// releases the replica right after each request and pre-warms it ahead of
// the next, every decision with its reason.
func TestLearnedTimer(t *testing.T) {
	st := NewStepper(learnedRevision(), StepperOptions{First: at(0), Ready: 1})
	ready := int32(1)
	type seen struct {
		desired int32
		codes   []Code
		keptFor int64 // a PreWarm's or KeepAlive's second: now + A
	}
	decisions := map[int64]seen{}
	var dec Decision
	for s := int64(0); s < 300*15; s++ {
		conc := 0.0
		if s%300 == 0 {
			conc = 1
		}
		r := ready
		if !st.StepInto(at(s), Second{HasMetric: ready > 0 || conc > 0, Concurrency: conc, RPS: conc, Ready: &r}, &dec) {
			continue
		}
		ready = dec.Desired
		var codes []Code
		keptFor := int64(-1)
		for _, rs := range dec.Reasons() {
			codes = append(codes, rs.Code)
			if rs.Code == PreWarm || rs.Code == KeepAlive {
				keptFor = s + int64(rs.values[0])
			}
			if m := rs.Message(); m == "" || m == string(rs.Code) {
				t.Errorf("reason %s has no sentence", rs.Code)
			}
		}
		decisions[s] = seen{dec.Desired, codes, keptFor}
	}
	check := func(s int64, desired int32, code Code) {
		t.Helper()
		d, ok := decisions[s]
		if !ok || d.desired != desired || !hasCodeIn(d.codes, code) {
			t.Errorf("second %d: desired %d, reasons %v; want desired %d with %s", s, d.desired, d.codes, desired, code)
		}
	}
	// Second round: Knative's stable window holds the replica.
	check(300+30, 1, LearnedFallback)
	// Round 13: released right after the request, pre-warmed ahead of the next.
	check(300*13+4, 0, LearnedRelease)
	check(300*13+200, 0, LearnedRelease)
	// After the release, every replica is pre-warmed for the timer's second
	// of the minute (second 0: a whole minute of idle time), the last one
	// at most a bin (10%) and two leads ahead of the next request and early
	// enough to be ready for it. (The bins of 4 minutes, which no gap
	// ended in, borrow a little hazard from their neighbour, and at the
	// timer's second that little is worth a pre-warm too.)
	last := int64(-1)
	for s := int64(300*13 + 4); s < 300*14; s += 2 {
		d, ok := decisions[s]
		if !ok || d.desired != 1 {
			continue
		}
		if !hasCodeIn(d.codes, PreWarm) && !hasCodeIn(d.codes, KeepAlive) || d.keptFor%60 != 0 {
			t.Errorf("second %d: a replica for %v, for second %d; want PreWarm or KeepAlive for a whole minute", s, d.codes, d.keptFor)
		}
		if last < 0 || s > last+2 {
			check(s, 1, PreWarm)
		}
		last = s
	}
	if last < 300*14-30-20 || last > 300*14-2 {
		t.Errorf("last replica kept at second %d: want within [%d, %d]", last, 300*14-50, 300*14-2)
	}
	check(300*14-2, 1, KeepAlive)
}

func hasCodeIn(codes []Code, c Code) bool {
	for _, x := range codes {
		if x == c {
			return true
		}
	}
	return false
}

func TestLearnedMessages(t *testing.T) {
	tests := []struct {
		r    Reason
		want string
	}{
		{preWarmReason(240, 5, 37, ""), "pre-warm: next request expected in about 4m0s (5 of the 37 idle gaps"},
		{learnedReleaseReason(60, 10, 40, ""), "released: no request expected before about 1m0s"},
		{learnedFallbackReason(3, 10, ""), "3 idle gap(s) seen, it needs 10"},
	}
	for _, tt := range tests {
		if got := tt.r.Message(); !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want it to contain %q", tt.r.Code, got, tt.want)
		}
	}
}

func TestKnativePolicyHasNoLearnedState(t *testing.T) {
	if d := New(knativeDefaults(), at(0), 0); d.learned != nil {
		t.Error("the knative policy allocated learned state")
	}
}
