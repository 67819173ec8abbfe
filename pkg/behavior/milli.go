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
