package decider

import (
	"reflect"
	"testing"
	"time"
)

// FuzzMarkIsTheCopy: at every second, the copy BeforeInto builds after the
// step from a mark taken before it is the copy CloneInto takes before it
// (every field, the windows' rings included), and stepping both copies
// again gives the same decision. The trace is pairs of bytes: the load of
// a second (0: none; 255: a window-long gap, in which the stepper steps
// seconds without data) and its ready count; settings take the first
// bytes (windows, tick, scale-to-zero, weighted-exponential averages).
func FuzzMarkIsTheCopy(f *testing.F) {
	f.Add(uint8(0), []byte{10, 1, 20, 2, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 0, 0, 30, 1})
	f.Add(uint8(7), []byte{200, 3, 150, 3, 255, 3, 1, 3, 0, 3, 0, 3, 90, 2, 0, 0})
	f.Add(uint8(0x42), []byte{5, 1, 0, 1, 5, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 9, 0})
	f.Fuzz(func(t *testing.T, settings uint8, trace []byte) {
		rev := knativeDefaults()
		rev.StableWindow = time.Duration(6+int(settings%4)*3) * time.Second
		rev.PanicWindow = max(rev.StableWindow/10, time.Second)
		rev.TickInterval = time.Duration(1+int(settings>>2)%2) * time.Second
		rev.ScaleToZeroGracePeriod = time.Duration(1+int(settings>>3)%3) * time.Second
		if settings&0x40 != 0 {
			rev.Aggregation = "weightedExponential"
		}
		s := NewStepper(rev, StepperOptions{First: at(0), Ready: 1})
		var m Mark
		sec, marked := int64(1), 0
		for i := 0; i+1 < len(trace) && sec < 2000; i += 2 {
			if trace[i] == 255 {
				sec += int64(rev.StableWindow / time.Second)
				continue
			}
			ready := int32(trace[i+1] % 5)
			in := Second{Ready: &ready}
			if trace[i] != 0 {
				in.HasMetric, in.Concurrency, in.RPS = true, float64(trace[i])*1.3, float64(trace[i])
			}
			now := at(sec)
			want, _ := s.CloneInto(nil)
			ok := s.MarkInto(&m, now)
			var dec Decision
			s.StepInto(now, in, &dec)
			if ok {
				marked++
				got := s.BeforeInto(&m, nil)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("second %d: the copy built from the mark differs from the copy taken before:\n got %+v\nwant %+v", sec, *got.kpa, *want.kpa)
				}
				var a, b Decision
				got.StepInto(now, in, &a)
				want.StepInto(now, in, &b)
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("second %d: stepped again, the copies decide %v and %v", sec, a, b)
				}
			}
			sec++
		}
		if len(trace) > 8 && marked == 0 && trace[0] != 0 && trace[0] != 255 && trace[2] != 0 && trace[2] != 255 {
			t.Fatalf("two seconds of load in a row and no second marked")
		}
	})
}
