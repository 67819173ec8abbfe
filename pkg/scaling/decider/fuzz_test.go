package decider

import (
	"ebb.dev/ebb/pkg/config"
	"testing"
	"time"
)

// FuzzDecide drives a decider with arbitrary settings and traffic and checks
// the invariants every decision must keep.
func FuzzDecide(f *testing.F) {
	f.Add(uint8(1), uint8(0), uint8(0), uint8(1), uint16(211), []byte{10, 1, 20, 2, 0, 0, 0, 1, 200, 3})
	f.Add(uint8(3), uint8(2), uint8(5), uint8(2), uint16(0), []byte{0, 0, 255, 9, 3, 1, 0, 0})
	f.Add(uint8(30), uint8(0), uint8(0), uint8(1), uint16(0x8000|211),
		[]byte{10, 1, 0, 1, 0, 1, 10, 1, 0, 1, 0, 1, 10, 1, 0, 1, 0, 1, 10, 1, 0, 1, 0, 1, 10, 1, 0, 0, 0, 0, 10, 0, 0, 1, 0, 1,
			10, 1, 0, 1, 0, 1, 10, 1, 0, 1, 0, 1, 10, 1, 0, 1, 0, 1, 10, 1, 0, 1, 0, 1, 10, 1, 0, 1, 0, 1, 0, 1, 0, 0, 0, 0})
	f.Add(uint8(30), uint8(0), uint8(0), uint8(12), uint16(0x8000|211), // the learned lead
		[]byte{10, 0, 10, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 1, 0, 1,
			0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 1})
	f.Add(uint8(2), uint8(0), uint8(0x80), uint8(1), uint16(0x8000|211), // parking, the learned policy
		[]byte{10, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 10, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1})
	f.Add(uint8(25), uint8(0), uint8(0xc0), uint8(1), uint16(211), // parking refused midway
		[]byte{10, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 255, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1})
	f.Fuzz(func(t *testing.T, window, minScale, maxScale, initial uint8, tbc uint16, trace []byte) {
		rev := knativeDefaults()
		rev.StableWindow = time.Duration(6+int(window)%60) * time.Second
		rev.PanicWindow = max(rev.StableWindow/10, time.Second)
		rev.MinScale, rev.MaxScale = int32(minScale%8), int32(maxScale%16)
		if rev.MaxScale != 0 && rev.MaxScale < rev.MinScale {
			rev.MaxScale = rev.MinScale
		}
		rev.InitialScale, rev.InitialReplicas = int32(initial%5), int32(initial%5)
		rev.TargetBurstCapacity = float64(tbc%400) - 1
		rev.ScaleDownDelay = time.Duration(window%3) * 2 * time.Second
		if window%2 == 1 {
			rev.Aggregation = "weightedExponential"
		}
		if tbc&0x8000 != 0 { // the learned scale-to-zero policy, with a cheap history (a gap every few seconds)
			rev.ScaleToZeroPolicy = config.ScaleToZeroLearned
			rev.ColdStartCost, rev.PrewarmLead = time.Duration(1+int(window)%120)*time.Second, time.Duration(int(initial)%12)*time.Second
			if initial%13 == 12 {
				rev.PrewarmLead = config.PrewarmLeadAuto // learned from the start-ups the ready counts show
			}
		}
		if maxScale&0x80 != 0 { // parking, for a while or for ever
			rev.Parking = config.Parking{Enabled: true, CPURequestMilli: 1, MemoryRequestBytes: 16 << 20,
				MaxDuration: time.Duration(int(window)%40) * time.Second, Cost: float64(1+int(initial)%10) / 10}
		}
		d := New(rev, at(0), 0)
		var prevPanicRec int32 = -1
		for i := 0; i+1 < len(trace); i += 2 {
			now := at(int64(i / 2))
			ready := int32(trace[i+1] % 20)
			d.observeReady(now, ready) // as the Stepper does every second
			if trace[i] != 0 {
				d.Record(now, float64(trace[i])*1.7, float64(trace[i]))
			}
			dec := d.Decide(Input{Now: now, Ready: ready, Reachable: trace[i+1]&0x80 == 0})
			checkInvariants(t, rev, dec, ready, prevPanicRec)
			checkParked(t, rev, dec)
			if trace[i] == 255 && maxScale&0x40 != 0 {
				d.RefuseParking() // the platform cannot park
			}
			prevPanicRec = -1
			if dec.Panic {
				prevPanicRec = dec.Recommended
			}
		}
	})
}

func checkInvariants(t *testing.T, rev *config.Revision, dec Decision, ready, prevPanicRec int32) {
	t.Helper()
	if dec.Desired < 0 || dec.Recommended < -1 {
		t.Fatalf("negative count: %+v", dec)
	}
	if ceiling := max(rev.MaxScale, rev.InitialScale, rev.InitialReplicas); rev.MaxScale > 0 && dec.Desired > ceiling {
		t.Fatalf("desired %d above max-scale %d: %+v", dec.Desired, rev.MaxScale, dec)
	}
	if ready == 0 && !dec.ActivatorInPath {
		t.Fatalf("no ready pod but activator out of the path: %+v", dec)
	}
	if rev.TargetBurstCapacity == -1 && dec.EBC != -1 {
		t.Fatalf("TBC -1 but EBC %d", dec.EBC)
	}
	// The panic maximum is kept before the scale-down delay, which may hold
	// a higher count for a while; without a delay the count never falls.
	if dec.Panic && prevPanicRec >= 0 && dec.Recommended < prevPanicRec && rev.ScaleDownDelay == 0 {
		t.Fatalf("recommendation fell in panic from %d to %d", prevPanicRec, dec.Recommended)
	}
	if dec.nReasons == 0 {
		t.Fatalf("a decision without reasons: %+v", dec)
	}
}

// checkParked: a parked decision asks for one replica, with the activator
// in the path and pokes on; and only with parking on.
func checkParked(t *testing.T, rev *config.Revision, dec Decision) {
	t.Helper()
	if !dec.Parked {
		return
	}
	if !rev.Parking.Enabled || dec.Desired != 1 || !dec.ActivatorInPath || !dec.AtZero {
		t.Fatalf("parked decision with parking %v, desired %d, activator %v, atZero %v: %+v", rev.Parking.Enabled, dec.Desired,
			dec.ActivatorInPath, dec.AtZero, dec)
	}
}
