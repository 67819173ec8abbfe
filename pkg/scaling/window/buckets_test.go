package window

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

var epoch = time.Unix(1_767_225_600, 0) // 2026-01-01T00:00:00Z, an even second

func at(s int64) time.Time { return epoch.Add(time.Duration(s) * time.Second) }

type write struct {
	t int64
	v float64
}

func TestLinear(t *testing.T) {
	tests := []struct {
		name   string
		window time.Duration
		writes []write
		now    int64
		want   float64
	}{
		{name: "empty", window: 6 * time.Second, now: 10, want: 0},
		{name: "young series averages over its own length", window: 6 * time.Second,
			writes: []write{{0, 10}, {1, 20}}, now: 1, want: 15},
		{name: "full window", window: 3 * time.Second,
			writes: []write{{0, 3}, {1, 6}, {2, 9}, {3, 12}}, now: 3, want: 9},
		{name: "trailing missing seconds are left out", window: 6 * time.Second,
			writes: []write{{0, 10}, {1, 20}}, now: 3, want: 15},
		{name: "missing seconds between writes count as zero", window: 6 * time.Second,
			writes: []write{{0, 10}, {2, 20}}, now: 2, want: 10},
		{name: "t-L equal to the window is zero", window: 6 * time.Second,
			writes: []write{{0, 10}}, now: 6, want: 0},
		{name: "t-L one less than the window", window: 6 * time.Second,
			writes: []write{{0, 6}, {1, 6}, {2, 6}, {3, 6}, {4, 6}, {5, 6}}, now: 10, want: 6},
		{name: "a gap of a window resets the run", window: 3 * time.Second,
			writes: []write{{0, 100}, {1, 100}, {4, 4}}, now: 4, want: 4},
		{name: "two writes in one second add up", window: 6 * time.Second,
			writes: []write{{0, 1.5}, {0, 2.5}}, now: 0, want: 4},
		{name: "rounded to six decimals", window: 6 * time.Second,
			writes: []write{{0, 1}, {1, 1}, {2, 0}}, now: 2, want: 0.666667},
		{name: "write older than the window is dropped", window: 3 * time.Second,
			writes: []write{{5, 3}, {2, 100}}, now: 5, want: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuckets(tc.window)
			for _, w := range tc.writes {
				b.Record(at(w.t), w.v)
			}
			if got := b.Linear(at(tc.now)); got != tc.want {
				t.Errorf("Linear(%d) = %v, want %v", tc.now, got, tc.want)
			}
		})
	}
}

func TestWeightedExponential(t *testing.T) {
	tests := []struct {
		name      string
		window    time.Duration
		smoothing float64
		writes    []write
		now       int64
		want      float64
	}{
		{name: "one second reads v*m", window: 60 * time.Second, smoothing: 0.2,
			writes: []write{{0, 30}}, now: 0, want: 6},
		{name: "decays by (1-m) per second", window: 60 * time.Second, smoothing: 0.2,
			writes: []write{{0, 10}}, now: 2, want: 10 * 0.2 * 0.8 * 0.8},
		{name: "past the window is zero", window: 6 * time.Second,
			smoothing: 1 - math.Pow(0.0001, 1.0/6), writes: []write{{0, 10}}, now: 7, want: 0},
		{name: "40 buckets", window: 40 * time.Second,
			smoothing: 1 - math.Pow(0.0001, 1.0/40), writes: []write{{0, 1}}, now: 0, want: 1 - math.Pow(0.0001, 1.0/40)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuckets(tc.window)
			if math.Abs(b.Smoothing()-tc.smoothing) > 1e-12 {
				t.Fatalf("Smoothing() = %v, want %v", b.Smoothing(), tc.smoothing)
			}
			for _, w := range tc.writes {
				b.Record(at(w.t), w.v)
			}
			if got := b.WeightedExponential(at(tc.now)); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("WeightedExponential(%d) = %v, want %v", tc.now, got, tc.want)
			}
		})
	}
}

func TestSmoothingCoefficients(t *testing.T) {
	// Figures from Knative's digest: 0.2 for 60 buckets, 0.78456 for 6, 0.20567 for 40.
	for n, want := range map[int]float64{60: 0.2, 6: 0.78456, 40: 0.20567} {
		got := NewBuckets(time.Duration(n) * time.Second).Smoothing()
		if math.Abs(got-want) > 5e-6 {
			t.Errorf("smoothing for %d buckets = %v, want %v", n, got, want)
		}
	}
}

func TestIsEmpty(t *testing.T) {
	b := NewBuckets(6 * time.Second)
	if !b.IsEmpty(at(0)) {
		t.Error("new buckets are not empty")
	}
	b.Record(at(10), 1)
	for now, want := range map[int64]bool{10: false, 16: false, 17: true} {
		if got := b.IsEmpty(at(now)); got != want {
			t.Errorf("IsEmpty(%d) = %v, want %v", now, got, want)
		}
	}
}

// TestDifferential pits Buckets against the literal reference on random
// traces: dyadic values (exact in floating point) must match exactly, real
// values to within rounding.
func TestDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		n := int64(1 + rng.IntN(20))
		b, r := NewBuckets(time.Duration(n)*time.Second), newNaive(n)
		dyadic := round%2 == 0
		sec := int64(rng.IntN(5))
		floor := int64(-1 << 62) // a trim's now: no call about an earlier second after it
		for step := range 400 {
			sec += int64(rng.IntN(int(n)*2/3 + 2)) // gaps, sometimes >= n
			if rng.IntN(10) == 0 {
				sec -= int64(rng.IntN(int(n) + 2)) // a late write
			}
			sec = max(sec, floor)
			v := rng.Float64() * 100
			if dyadic {
				v = float64(rng.IntN(800)) / 8
			}
			b.Record(at(sec), v)
			r.record(sec, v)
			now := max(sec, r.last) + int64(rng.IntN(int(n)+2))
			if rng.IntN(4) == 0 { // a rest: the ring goes when the window is empty
				later := now + int64(rng.IntN(2*int(n)+2))
				b.Trim(at(later))
				if b.IsEmpty(at(later)) != r.empty(later) {
					t.Fatalf("round %d step %d: IsEmpty(%d) = %v after Trim, want %v", round, step, later, b.IsEmpty(at(later)), r.empty(later))
				}
				floor, now = later, later
			}
			gotL, wantL := b.Linear(at(now)), r.linear(now)
			gotW, wantW := b.WeightedExponential(at(now)), r.weighted(now)
			tolL, tolW := 0.0, 0.0
			if !dyadic {
				tolL, tolW = 1.5e-6, 1e-9*(1+math.Abs(wantW))
			}
			if math.Abs(gotL-wantL) > tolL || math.Abs(gotW-wantW) > tolW {
				t.Fatalf("round %d step %d (N=%d, t=%d): linear %v want %v; weighted %v want %v",
					round, step, n, now, gotL, wantL, gotW, wantW)
			}
		}
	}
}

func BenchmarkLinear(b *testing.B) {
	for _, n := range []int{6, 60, 3600} {
		bk := NewBuckets(time.Duration(n) * time.Second)
		b.Run(time.Duration(n*int(time.Second)).String(), func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				now := at(int64(i))
				bk.Record(now, 10)
				_ = bk.Linear(now)
			}
		})
	}
}
