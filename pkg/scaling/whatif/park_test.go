package whatif

import (
	"testing"
	"time"

	"ebb.dev/ebb/pkg/config"
)

// TestParkedTier: a request every 10 minutes. Without parking each finds
// the revision at zero (a cold start); with it the replica is parked
// between them, each request wakes it at the parked wake's cost (no cold
// start, no new replica), and the parked time is charged at parked-cost
// instead of an idle replica's.
func TestParkedTier(t *testing.T) {
	counts := map[int]uint32{}
	for m := 5; m <= 120; m += 10 {
		counts[m] = 1
	}
	fn := Function{Hash: "f", Invocations: minutes(120, counts), Duration: 100 * time.Millisecond}
	o := Options{ColdStart: time.Second, StartCost: time.Second, ParkedWake: 20 * time.Millisecond}
	o.Revision = revision(t, nil)
	zero := Run(&fn, o)
	o.Revision = revision(t, map[string]string{config.AnnotationEnableParking: "true", config.AnnotationMaxParkedDuration: "0s"})
	parked := Run(&fn, o)
	if zero.ColdStarts != 12 || zero.WakesFromParked != 0 || zero.ParkedReplicaSeconds() != 0 {
		t.Errorf("without parking: %d cold starts, %d wakes, %.0f parked s; want 12, 0, 0", zero.ColdStarts, zero.WakesFromParked,
			zero.ParkedReplicaSeconds())
	}
	// (The replica of initial-scale 1 is parked before the first request.)
	if parked.ColdStarts != 0 || parked.WakesFromParked != 12 || parked.ReplicaStarts != 1 {
		t.Errorf("with parking: %d cold starts, %d wakes from parked, %d replica starts; want 0, 12, 1",
			parked.ColdStarts, parked.WakesFromParked, parked.ReplicaStarts)
	}
	if p99 := parked.WaitPercentileMs(90); p99 != 20 {
		t.Errorf("with parking: wait p90 %vms; want the parked wake, 20ms", p99)
	}
	// Parked most of two hours: charged at 0.1 of an idle replica.
	ps := parked.ParkedReplicaSeconds()
	if ps < 6000 || parked.ParkedCost != config.DefaultParkedCost {
		t.Fatalf("parked %.0f replica-s at %v; want most of 2h at the default cost", ps, parked.ParkedCost)
	}
	want := parked.IdleReplicaSeconds() + 0.1*ps + float64(parked.ReplicaStarts)
	if got := parked.Cost(); got < want-1e-6 || got > want+1e-6 {
		t.Errorf("cost %v, want idle + 0.1 x parked + starts = %v", got, want)
	}
	if l := parked.Line(); l.ParkedReplicaSeconds != ps || l.WakesFromParked != 12 {
		t.Errorf("line %+v lacks the parked fields", l)
	}
	if l := zero.Line(); l.ParkedReplicaSeconds != 0 || l.WakesFromParked != 0 {
		t.Errorf("line without parking %+v has parked fields", l)
	}
}
