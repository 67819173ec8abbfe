package decider

import (
	"testing"
	"time"

	"ebb.dev/ebb/pkg/behavior"
	"ebb.dev/ebb/pkg/config"
)

// fuzzBehavior picks a behavior: none, Kubernetes' defaults, or rules with
// short windows and periods built from b.
func fuzzBehavior(b uint8) *behavior.Behavior {
	switch b % 4 {
	case 0:
		return nil
	case 1:
		return behavior.Default(&behavior.Behavior{})
	}
	sel := []behavior.Select{behavior.Max, behavior.Min, behavior.Disabled}[b%3]
	rules := &behavior.Rules{
		StabilizationWindowSeconds: ptrTo(int32(b % 30)),
		SelectPolicy:               &sel,
		Policies: []behavior.Policy{
			{Type: behavior.Pods, Value: 1 + int32(b%4), PeriodSeconds: 1 + int32(b%20)},
			{Type: behavior.Percent, Value: 10 + int32(b), PeriodSeconds: 5},
		},
	}
	return behavior.Default(&behavior.Behavior{ScaleUp: rules, ScaleDown: rules})
}

// FuzzDecideWithBehavior: the KPA with a behavior keeps every invariant of
// FuzzDecide (counts, max-scale, activator, reasons).
func FuzzDecideWithBehavior(f *testing.F) {
	f.Add(uint8(1), uint8(0), uint8(5), []byte{10, 1, 20, 2, 0, 0, 0, 1, 200, 3})
	f.Add(uint8(3), uint8(2), uint8(0), []byte{0, 0, 255, 9, 3, 1, 0, 0})
	f.Fuzz(func(t *testing.T, b, minScale, maxScale uint8, trace []byte) {
		rev := knativeDefaults()
		rev.StableWindow, rev.PanicWindow = 6*time.Second, time.Second
		rev.MinScale, rev.MaxScale = int32(minScale%4), int32(maxScale%12)
		if rev.MaxScale != 0 && rev.MaxScale < rev.MinScale {
			rev.MaxScale = rev.MinScale
		}
		rev.Behavior = fuzzBehavior(b)
		d := New(rev, at(0), 0)
		for i := 0; i+1 < len(trace); i += 2 {
			now := at(int64(i))
			ready := int32(trace[i+1] % 20)
			if trace[i] != 0 {
				d.Record(now, float64(trace[i])*1.7, float64(trace[i]))
			}
			dec := d.Decide(Input{Now: now, Ready: ready, Reachable: trace[i+1]&0x80 == 0})
			checkInvariants(t, rev, dec, ready, -1)
		}
	})
}

// FuzzHPA: whatever the pods and their samples, the HPA class stays within
// [max(min-scale, 1), max-scale] once it has decided, and explains itself.
func FuzzHPA(f *testing.F) {
	f.Add(uint8(1), uint8(1), uint8(9), []byte{3, 10, 1, 40, 2, 0, 0, 255, 7, 12, 9})
	f.Add(uint8(2), uint8(0), uint8(0), []byte{0, 0, 200, 200, 17, 3, 3, 3})
	f.Fuzz(func(t *testing.T, b, minScale, maxScale uint8, trace []byte) {
		metrics := []config.MetricTarget{{Metric: config.MetricConcurrency, Target: 10}}
		if b%2 == 1 {
			metrics = append(metrics, config.MetricTarget{Metric: config.MetricCPU, Target: 60})
		}
		rev := hpaRevision(metrics...)
		rev.MinScale, rev.MaxScale = int32(minScale%4), int32(maxScale%12)
		if rev.MaxScale != 0 && rev.MaxScale < rev.MinScale {
			rev.MaxScale = rev.MinScale
		}
		rev.Behavior = fuzzBehavior(b >> 1)
		lo, hi := max(rev.MinScale, 1), rev.MaxScale
		st := NewStepper(rev, StepperOptions{First: at(0), Ready: 1})
		for i := 0; i < len(trace); i++ {
			ps := fuzzPods(trace[i:])
			dec, ok := st.Step(at(int64(i)), Second{Pods: ps})
			if !ok {
				continue
			}
			if dec.Desired < lo || hi != 0 && dec.Desired > hi {
				t.Fatalf("t=%d: desired %d outside [%d, %d]: %v", i, dec.Desired, lo, hi, reasonCodes(dec))
			}
			if dec.nReasons == 0 || dec.Panic || dec.EBC != 0 {
				t.Fatalf("t=%d: %+v", i, dec)
			}
		}
	})
}

// fuzzPods makes up to 8 pods from the bytes: state and values.
func fuzzPods(bs []byte) []PodSample {
	n := int(bs[0] % 8)
	ps := make([]PodSample, 0, n)
	for j := 0; j < n && j+1 < len(bs); j++ {
		v := bs[j+1]
		p := PodSample{Name: string(rune('a' + j)), Ready: v&1 == 0, Deleting: v&2 != 0 && v&4 != 0}
		switch v % 5 {
		case 0:
			p.Phase = "Pending"
		case 1:
			p.Phase = "Failed"
		}
		if v&8 == 0 {
			c, u := float64(v%50), float64(v)
			p.Concurrency, p.CPU = &c, &u
		}
		ps = append(ps, p)
	}
	return ps
}
