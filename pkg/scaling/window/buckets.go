package window

import (
	"math"
	"time"
)

// Buckets is a ring of one-second buckets covering a window of N seconds.
// The zero value is not usable; build one with NewBuckets. The ring is
// allocated with the first value of a run of data, and Trim lets go of it
// once the window is empty: a revision that never sees traffic, or rests
// at zero, holds none.
type Buckets struct {
	n       int64     // N, the window in seconds
	buckets []float64 // ring of N: second s lives at index s mod N; nil while empty
	// total is the sum of every bucket in the ring, kept as values come and
	// go; it is recomputed from the buckets once per lap so that rounding
	// errors of the running sum cannot accumulate.
	total   float64
	first   int64 // F: first second of the current run of data
	last    int64 // L: last recorded second
	hasData bool
	lap     int // writes to new seconds since total was last recomputed
	// smoothing is m of the weighted-exponential average.
	smoothing float64
}

// NewBuckets returns buckets for a window of the given length, in whole
// seconds (at least one).
func NewBuckets(window time.Duration) *Buckets {
	n := int(window / time.Second)
	if n < 1 {
		n = 1
	}
	return &Buckets{
		n:         int64(n),
		smoothing: math.Max(1-math.Pow(0.0001, 1/float64(n)), 0.2),
	}
}

// Len is the window length N in seconds.
func (b *Buckets) Len() int { return int(b.n) }

// Smoothing is the coefficient m of the weighted-exponential average.
func (b *Buckets) Smoothing() float64 { return b.smoothing }

// LastWrite returns the last recorded second L, and false when nothing was
// ever recorded.
func (b *Buckets) LastWrite() (int64, bool) { return b.last, b.hasData }

// IsEmpty reports whether no value was recorded in [t-N, t], the condition
// under which the decider has no data.
func (b *Buckets) IsEmpty(now time.Time) bool {
	return !b.hasData || now.Unix()-b.last > b.n
}

// Trim lets go of the ring when the window is empty at now (IsEmpty): as
// long as every later call is about a second at or after now, every answer
// is the same without it, and the next value starts a new run of data,
// which clears the ring anyway.
func (b *Buckets) Trim(now time.Time) {
	if b.IsEmpty(now) {
		b.buckets, b.hasData, b.total, b.lap = nil, false, 0, 0
	}
}

func (b *Buckets) index(sec int64) int {
	i := sec % b.n // one division: Record runs every second of every window
	if i < 0 {
		i += b.n
	}
	return int(i)
}

// Record adds v to the bucket of now's second. Values for seconds already
// out of the window are dropped; several values for one second add up.
func (b *Buckets) Record(now time.Time, v float64) {
	sec := now.Unix()
	n := b.n
	i := -1 // sec's bucket, when advance found it
	switch {
	case !b.hasData || sec-b.last >= n:
		b.reset(sec)
	case sec > b.last:
		i = b.advance(sec)
	case sec <= b.last-n:
		return // older than the window
	case sec < b.first:
		b.first = sec
	}
	if i < 0 {
		i = b.index(sec)
	}
	b.buckets[i] += v
	b.total += v
}

// reset starts a new run of data at sec: the ring is cleared.
func (b *Buckets) reset(sec int64) {
	if b.buckets == nil {
		b.buckets = make([]float64, b.n)
	}
	clear(b.buckets)
	b.total = 0
	b.first, b.last, b.hasData, b.lap = sec, sec, true, 0
}

// advance moves L forward to sec (> L), zeroing the buckets of the
// seconds in between (and the one of sec): they held values a window old.
// It returns sec's bucket.
func (b *Buckets) advance(sec int64) int {
	i := b.index(b.last)
	for s := b.last + 1; s <= sec; s++ {
		if i++; i == len(b.buckets) {
			i = 0
		}
		b.total -= b.buckets[i]
		b.buckets[i] = 0
	}
	b.lap += int(sec - b.last)
	b.last = sec
	if b.lap >= len(b.buckets) {
		b.lap = 0
		b.total = 0
		for _, v := range b.buckets {
			b.total += v
		}
	}
	return i
}

// Linear returns the linear window average at now (see the package doc).
func (b *Buckets) Linear(now time.Time) float64 {
	if !b.hasData {
		return 0
	}
	t := now.Unix()
	n := b.n
	d := t - b.last
	if d >= n {
		return 0
	}
	sum := b.total
	if d < 0 {
		d = 0 // a decision in the past sees the window ending at L
	}
	for s := b.last + 1; s <= b.last+d; s++ {
		sum -= b.buckets[b.index(s)] // values of seconds t-N and older
	}
	count := min(b.last-b.first+1, n-d)
	return roundTo6(sum / float64(count))
}

// WeightedExponential returns the weighted-exponential average at now (see
// the package doc). It is neither normalised nor rounded.
func (b *Buckets) WeightedExponential(now time.Time) float64 {
	if !b.hasData {
		return 0
	}
	t := now.Unix()
	n := b.n
	if t-b.last > n {
		return 0
	}
	m := b.smoothing
	lo := max(t-n+1, b.last-n+1, b.first)
	sum := 0.0
	for s := lo; s <= b.last; s++ {
		if v := b.buckets[b.index(s)]; v != 0 {
			sum += v * m * math.Pow(1-m, float64(t-s))
		}
	}
	return sum
}

// roundTo6 rounds to 6 decimals, halves away from zero.
func roundTo6(x float64) float64 {
	return math.Round(x*1e6) / 1e6
}

// clone returns a copy of b that shares nothing with it.
func (b *Buckets) clone() *Buckets { return b.CloneInto(nil) }

// CloneInto is Clone reusing dst's memory (nil: new); dst is overwritten.
func (b *Buckets) CloneInto(dst *Buckets) *Buckets {
	if dst == nil {
		dst = new(Buckets)
	}
	ring := dst.buckets
	*dst = *b
	if b.buckets != nil {
		dst.buckets = append(ring[:0], b.buckets...)
	}
	return dst
}
