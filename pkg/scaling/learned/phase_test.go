package learned

import (
	"testing"
	"time"

	"ebb.dev/ebb/pkg/config"
)

func TestScheduledOdds(t *testing.T) {
	tests := []struct {
		name   string
		phases map[int]int // phase -> long gaps that ended at it
		lo, hi float64
	}{
		{name: "no long gap: even odds", phases: nil, lo: 0.5, hi: 0.5},
		{name: "three at one second: scheduled past doubt", phases: map[int]int{30: 3}, lo: 0.999, hi: 1},
		{name: "32 at one second", phases: map[int]int{30: 32}, lo: 1 - 1e-9, hi: 1},
		{name: "two seconds, 16 each", phases: map[int]int{15: 16, 45: 16}, lo: 1 - 1e-9, hi: 1},
		{name: "32 at 32 seconds: random", phases: func() map[int]int {
			m := map[int]int{}
			for p := range 32 {
				m[p] = 1
			}
			return m
		}(), lo: 0, hi: 1e-9},
		{name: "one second: not yet telling", phases: map[int]int{7: 1}, lo: 0.4, hi: 0.6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c [60]int
			n := 0
			for p, k := range tt.phases {
				c[p], n = k, n+k
			}
			if got := scheduledOdds(&c, float64(n)); got < tt.lo || got > tt.hi {
				t.Errorf("scheduledOdds = %v, want within [%v, %v]", got, tt.lo, tt.hi)
			}
		})
	}
}

// TestPhaseKeep: the seconds of a long bin worth a replica, for a
// revision whose long gaps all ended at second 0 of a minute and one
// whose long gaps ended at every second.
func TestPhaseKeep(t *testing.T) {
	scheduled, random := &idleGaps{}, &idleGaps{}
	for i := range phaseGaps {
		scheduled.pushPhase(0)
		random.pushPhase(uint8(i * 60 / phaseGaps))
	}
	for _, h := range []*idleGaps{scheduled, random} {
		share := h.rankPhases()
		var sum float64
		for _, s := range share {
			sum += s
		}
		if sum < 0.999 || sum > 1.001 || !(share[0] >= share[59]) {
			t.Errorf("shares %v: want them to sum to 1, best first", share)
		}
	}
	// A bin whose cost × hazard is 0.05: worth nothing at a random second,
	// worth the one second of the minute a scheduled revision comes at.
	s, r := scheduled.rankPhases(), random.rankPhases()
	if got := phasesWorth(0.05, &s); got != 1 || scheduled.phaseRank[0] != 0 {
		t.Errorf("scheduled: %d seconds worth a replica (second 0 ranked %d), want 1 (ranked 0)", got, scheduled.phaseRank[0])
	}
	if got := phasesWorth(0.05, &r); got != 0 {
		t.Errorf("random: %d seconds worth a replica, want 0", got)
	}
	if a, b := phasesWorth(1, &r), phasesWorth(0.99, &r); a != everyPhase || b != 0 {
		t.Errorf("random, at and below the bin's own rule: %d and %d seconds, want %d and 0", a, b, everyPhase)
	}
	// keptIn finds the second whose phase is kept: the last load at second
	// 20 of a minute, the bin [553, 608) kept at second 0 only.
	scheduled.lastBusy = 60*100 + 20
	b := gapBin(580)
	scheduled.keepPhases[b] = 1
	sec, bin, ok := scheduled.keptIn(500, 700, false)
	if !ok || bin != b || sec != 580 {
		t.Errorf("keptIn = %d in bin %d (%v), want 580 (the idle second at a whole minute) in bin %d", sec, bin, ok, b)
	}
	if _, _, ok := scheduled.keptIn(581, 700, false); ok {
		t.Error("keptIn past the bin's kept second found one")
	}
}

// TestLead: the lead is a tick plus the longest of the latest start-ups;
// a replica released before it is ready is not measured; an explicit lead
// is kept.
func TestLead(t *testing.T) {
	rev := testRevision()
	rev.PrewarmLead, rev.TickInterval = config.PrewarmLeadAuto, 2*time.Second
	p := New(rev)
	if got := p.Lead(); got != unseenLead {
		t.Errorf("before any start-up: %d, want %d", got, unseenLead)
	}
	p.starts.decided(100, 0, 1) // asked at 100, ready at 103
	p.starts.decided(102, 0, 1) // still starting: the measure runs from 100
	if p.starts.ready(101, 0) || !p.starts.ready(103, 1) || p.Lead() != 2+3 {
		t.Errorf("after a 3s start-up: lead %d, want 5", p.Lead())
	}
	p.starts.decided(200, 0, 1)
	p.starts.decided(202, 0, 0) // released before ready: no measure
	if p.starts.ready(209, 1) {
		t.Error("a replica released before it was ready was measured")
	}
	for i := range startupsKept {
		p.starts.decided(int64(300+10*i), 0, 1)
		p.starts.ready(int64(301+10*i), 1)
	}
	if got := p.Lead(); got != 2+1 {
		t.Errorf("after %d start-ups of 1s: lead %d, want 3 (the 3s one is forgotten)", startupsKept, got)
	}
	rev.PrewarmLead = 7 * time.Second
	if fixed := New(rev); fixed.Lead() != 7 {
		t.Errorf("prewarm-lead 7s: lead %d", fixed.Lead())
	}

}
