package window

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestMaxWindow(t *testing.T) {
	// 5 minutes of delay at 2s granularity: 150 slots; a value drops out
	// 150 slots (300s) after it was recorded.
	w := NewMaxWindow(5*time.Minute, 2*time.Second)
	if w.Slots() != 150 {
		t.Fatalf("Slots() = %d, want 150", w.Slots())
	}
	w.Record(at(0), 10)
	for s := int64(2); s < 300; s += 2 {
		w.Record(at(s), 1)
		if got := w.Current(); got != 10 {
			t.Fatalf("at %ds Current() = %d, want 10", s, got)
		}
	}
	w.Record(at(300), 1)
	if got := w.Current(); got != 1 {
		t.Fatalf("at 300s Current() = %d, want 1", got)
	}
}

func TestMaxWindowSlotsRoundUp(t *testing.T) {
	if got := NewMaxWindow(3*time.Second, 2*time.Second).Slots(); got != 2 {
		t.Errorf("Slots() = %d, want ceil(3/2) = 2", got)
	}
}

func TestMaxWindowDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		slots := int64(1 + rng.IntN(12))
		w := NewMaxWindow(time.Duration(2*slots)*time.Second, 2*time.Second)
		r := &naiveMax{slots: slots, g: 2}
		sec := int64(0)
		for range 300 {
			sec += int64(rng.IntN(5))
			v := int32(rng.IntN(20))
			w.Record(at(sec), v)
			r.record(at(sec).Unix(), v)
			if got, want := w.Current(), r.current(); got != want {
				t.Fatalf("slots %d at %d: Current() = %d, want %d", slots, sec, got, want)
			}
		}
	}
}

func BenchmarkMaxWindow(b *testing.B) {
	w := NewMaxWindow(time.Hour, 2*time.Second)
	b.ReportAllocs()
	for i := range b.N {
		w.Record(at(int64(2*i)), int32(i%97))
		_ = w.Current()
	}
}
