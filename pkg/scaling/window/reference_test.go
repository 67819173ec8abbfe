package window

import "math"

// naive is the reference the optimised Buckets is checked against: it keeps
// every recorded value and evaluates the spec's formulas literally.
type naive struct {
	n       int64
	values  map[int64]float64
	first   int64
	last    int64
	hasData bool
}

func newNaive(n int64) *naive { return &naive{n: n, values: map[int64]float64{}} }

func (r *naive) record(sec int64, v float64) {
	switch {
	case !r.hasData || sec-r.last >= r.n:
		r.first, r.last, r.hasData = sec, sec, true
	case sec > r.last:
		r.last = sec
	case sec <= r.last-r.n:
		return
	case sec < r.first:
		r.first = sec
	}
	r.values[sec] += v
}

func (r *naive) empty(t int64) bool { return !r.hasData || t-r.last > r.n }

func (r *naive) value(s int64) float64 {
	if s < r.first {
		return 0
	}
	return r.values[s]
}

func (r *naive) linear(t int64) float64 {
	if !r.hasData || t-r.last >= r.n {
		return 0
	}
	d := max(t-r.last, 0)
	sum := 0.0
	for s := max(r.first, t-r.n+1, r.last-r.n+1); s <= r.last; s++ {
		sum += r.value(s)
	}
	return math.Round(sum/float64(min(r.last-r.first+1, r.n-d))*1e6) / 1e6
}

func (r *naive) weighted(t int64) float64 {
	if !r.hasData || t-r.last > r.n {
		return 0
	}
	m := math.Max(1-math.Pow(0.0001, 1/float64(r.n)), 0.2)
	sum := 0.0
	for s := t - r.n + 1; s <= r.last; s++ {
		if v := r.value(s); v != 0 {
			sum += v * m * math.Pow(1-m, float64(t-s))
		}
	}
	return sum
}

// naiveMax keeps every (index, value) and takes the maximum literally.
type naiveMax struct {
	slots, g int64
	rec      []maxEntry
	lastIdx  int64
}

func (r *naiveMax) record(sec int64, v int32) {
	r.lastIdx = sec / r.g
	r.rec = append(r.rec, maxEntry{index: r.lastIdx, value: v})
}

func (r *naiveMax) current() int32 {
	var best int32
	found := false
	for _, e := range r.rec {
		if e.index > r.lastIdx-r.slots && (!found || e.value > best) {
			best, found = e.value, true
		}
	}
	return best
}
