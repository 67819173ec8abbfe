package behavior

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestToMilli: Quantity.MilliValue's rounding, away from zero, saturating.
func TestToMilli(t *testing.T) {
	tests := []struct {
		in   float64
		want int64
	}{
		{0, 0}, {0.1, 100}, {0.3, 300}, {20.666, 20666}, {20.6665, 20667}, {0.0001, 1},
		{1e-300, 1}, {-0.0001, -1}, {-2.5, -2500}, {15, 15000}, {1e20, maxMilli}, {-1e20, -maxMilli},
	}
	for _, tc := range tests {
		if got, ok := ToMilli(tc.in); !ok || got != tc.want {
			t.Errorf("ToMilli(%v) = %d, %v; want %d, true", tc.in, got, ok, tc.want)
		}
	}
}

// toMilliReference is ToMilli the slow and obvious way: the shortest
// decimal form as an exact rational, times 1000, rounded away from zero.
func toMilliReference(v float64) int64 {
	if math.Abs(v) >= maxMilli/1000 {
		return int64(math.Copysign(maxMilli, v))
	}
	r, _ := new(big.Rat).SetString(strconv.FormatFloat(v, 'g', -1, 64))
	r.Mul(r, big.NewRat(1000, 1))
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(int64(m.Sign())))
	}
	return q.Int64()
}

// TestToMilliAgreesWithReference pits ToMilli against the exact rational
// conversion on values of every magnitude it handles.
func TestToMilliAgreesWithReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 200000 {
		var v float64
		switch i % 5 {
		case 0: // decimals as people and metrics write them
			v = math.Round(rng.Float64()*1e6) / math.Pow(10, float64(rng.IntN(9)))
		case 1: // any magnitude
			v = math.Ldexp(rng.Float64(), rng.IntN(100)-60)
		case 2: // near the saturation
			v = float64(maxMilli/1000) * (1 - rng.Float64()*1e-6)
		case 3: // three decimals (wholeMilli's), or a float next to them, below and above 2^33
			v = float64(rng.Int64N(1<<44)>>rng.IntN(44)) / 1000
			switch rng.IntN(3) {
			case 0:
				v = math.Nextafter(v, math.Inf(1))
			case 1:
				v = math.Nextafter(v, math.Inf(-1))
			}
		default: // bits
			v = math.Float64frombits(rng.Uint64())
		}
		if rng.IntN(2) == 0 {
			v = -v
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		if got, want := mustMilli(t, v), toMilliReference(v); got != want {
			t.Fatalf("ToMilli(%v) = %d, want %d", v, got, want)
		}
	}
}

func mustMilli(t testing.TB, v float64) int64 {
	got, ok := ToMilli(v)
	if !ok {
		t.Fatalf("ToMilli(%v) refused a number", v)
	}
	return got
}

func FuzzToMilli(f *testing.F) {
	for _, v := range []float64{0, 0.1, 20.6665, 1e-300, -2.5, 9.007199254740e12} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		if got, want := mustMilli(t, v), toMilliReference(v); got != want {
			t.Fatalf("ToMilli(%v) = %d, want %d", v, got, want)
		}
	})
}

func BenchmarkToMilli(b *testing.B) {
	b.ReportAllocs()
	for i := range b.N {
		ToMilli(float64(i%1000) * 0.173)
	}
}
