package behavior

import (
	"math"
	"strconv"
)

// maxMilli bounds a converted value so that sums and ratios stay well inside
// int64 and float64's exact integers.
const maxMilli = 1 << 53

func sampleMilli(v *float64) (int64, bool) {
	if v == nil {
		return 0, false
	}
	return ToMilli(*v)
}

// ToMilli converts v to integer milli-units as a Quantity parsed from v's
// shortest decimal form would give with MilliValue: exactly, rounded away
// from zero (0.1 is 100, 20.6665 is 20667, 0.0001 is 1). It saturates at
// ±2^53 and refuses NaN and infinities. It reads the decimal form's digits
// as an integer (at most 17 of them, so it fits an int64) and shifts it by
// its exponent: no allocation, every decision reads every pod through it.
func ToMilli(v float64) (int64, bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	if math.Abs(v) >= maxMilli/1000 {
		return int64(math.Copysign(maxMilli, v)), true
	}
	if k, ok := wholeMilli(v); ok {
		return k, true
	}
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], math.Abs(v), 'e', -1, 64) // d.ddde±XX
	at := len(b) - 1
	for b[at] != 'e' {
		at--
	}
	mant := b[:at]
	e, err := strconv.Atoi(string(b[at+1:]))
	if err != nil {
		return 0, false // never: AppendFloat wrote the exponent
	}
	var digits int64
	n := 0
	for _, c := range mant {
		if c != '.' {
			digits, n = digits*10+int64(c-'0'), n+1
		}
	}
	// |v| = digits × 10^(e-n+1), so |v| × 1000 = digits × 10^shift.
	q, rem := digits, int64(0)
	switch shift := e - n + 4; {
	case shift >= 0:
		for range shift {
			q *= 10 // below 2^53 × 1000 / 1000: no overflow
		}
	case shift < -18:
		q, rem = 0, digits
	default:
		p := int64(1)
		for range -shift {
			p *= 10
		}
		q, rem = digits/p, digits%p
	}
	if rem != 0 {
		q++ // away from zero
	}
	if v < 0 {
		q = -q
	}
	return q, true
}

// wholeMilli is ToMilli of a v of at most three decimals (a cpu of 40m is
// 0.04, a utilization of 40% is 40), without writing v out: k, v × 1000
// rounded, when k / 1000 is v again and |v| < 2^33. Then k / 1000 is in
// v's rounding interval, whose width there is at most 2^-19, so no other
// number of three decimals is, and any other number in it has at least
// six decimals and more digits than k / 1000: v's shortest decimal form
// is k / 1000, and ToMilli of it is k, exactly.
func wholeMilli(v float64) (int64, bool) {
	if !(math.Abs(v) < 1<<33) {
		return 0, false
	}
	k := math.Round(v * 1000)
	if k/1000 != v {
		return 0, false
	}
	return int64(k), true
}
