package behavior

import (
	"math"
	"math/big"
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
// ±2^53 and refuses NaN and infinities.
func ToMilli(v float64) (int64, bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	if math.Abs(v) >= maxMilli/1000 {
		return int64(math.Copysign(maxMilli, v)), true
	}
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(v, 'g', -1, 64))
	if !ok {
		return 0, false
	}
	r.Mul(r, big.NewRat(1000, 1))
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(int64(m.Sign()))) // away from zero
	}
	return q.Int64(), true
}
