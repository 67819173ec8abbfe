package whatif

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
)

// arrivalSecond is the second of the trace at which the i-th (0-based) of
// the n invocations of minute m (1-based) arrives:
// 60*(m-1) + floor((i + 0.5) * 60 / n), spread evenly over the minute and
// deterministic. It computes the floor in integers, (2i+1)*30/n, so no
// rounding of floating point can move an arrival to another second.
func arrivalSecond(m, i, n int) int64 {
	return 60*int64(m-1) + (2*int64(i)+1)*30/int64(n)
}

// Spread is where in its minute each of a minute's invocations arrives.
// The trace counts invocations per minute; where in its minute each came
// is not in it.
type Spread uint8

const (
	// SpreadEven spreads them evenly (ArrivalSecond): the contract's
	// spread. A minute's lone invocation always comes at second 30, so
	// every long gap of a function that runs at most once a minute ends
	// at the same second of the minute, scheduled or not.
	SpreadEven Spread = iota
	// SpreadRandom places each at a second of its minute drawn uniformly
	// at random, from a generator seeded by Options.Seed and the
	// function's hash: the same seed gives the same arrivals, a function's
	// arrivals do not depend on which other functions run, and a
	// predictor finds no second of the minute the traffic did not have.
	SpreadRandom
)

// Spread names, as the --arrivals flag takes them.
const (
	spreadEvenName   = "even"
	SpreadRandomName = "random"
)

func (s Spread) String() string {
	if s == SpreadRandom {
		return SpreadRandomName
	}
	return spreadEvenName
}

// ParseSpread reads a Spread by its name.
func ParseSpread(name string) (Spread, error) {
	switch name {
	case spreadEvenName:
		return SpreadEven, nil
	case SpreadRandomName:
		return SpreadRandom, nil
	}
	return 0, fmt.Errorf("%q is not a spread of arrivals: want %q (each minute's invocations evenly over it, the contract's spread) "+
		"or %q (each at a random second of its minute)", name, spreadEvenName, SpreadRandomName)
}

// arrivals yields the arrival seconds of a function in order, one minute
// at a time, without holding a day of them.
type arrivals struct {
	list   []int64 // Function.Arrivals, when given: taken as they are
	counts []uint32
	minute int // 0-based index of the current minute
	i      int // next invocation of the current minute

	rng    *rand.Rand // SpreadRandom's generator; nil: SpreadEven
	perSec [60]uint32 // SpreadRandom: the current minute's arrivals by second
	sec    int        // SpreadRandom: the second of perSec being yielded
	drawn  bool       // SpreadRandom: perSec holds the current minute
}

// newArrivals returns fn's arrivals under spread (fn.Arrivals, when given,
// as they are).
func newArrivals(fn *Function, spread Spread, seed uint64) *arrivals {
	a := &arrivals{list: fn.Arrivals, counts: fn.Invocations}
	if spread == SpreadRandom && fn.Arrivals == nil {
		h := fnv.New64a()
		h.Write([]byte(fn.Hash))
		a.rng = rand.New(rand.NewPCG(h.Sum64(), seed))
	}
	return a
}

// next returns the next arrival second, and false after the last.
func (a *arrivals) next() (int64, bool) {
	if a.list != nil {
		if len(a.list) == 0 {
			return 0, false
		}
		s := a.list[0]
		a.list = a.list[1:]
		return s, true
	}
	for a.minute < len(a.counts) {
		n := int(a.counts[a.minute])
		if a.rng != nil {
			if s, ok := a.nextRandom(n); ok {
				return s, true
			}
		} else if a.i < n {
			s := arrivalSecond(a.minute+1, a.i, n)
			a.i++
			return s, true
		}
		a.minute, a.i = a.minute+1, 0
	}
	return 0, false
}

// nextRandom yields the current minute's next arrival under SpreadRandom
// (its n invocations drawn into the minute's seconds when first asked),
// and false when the minute has no more.
func (a *arrivals) nextRandom(n int) (int64, bool) {
	if !a.drawn {
		a.perSec, a.sec, a.drawn = [60]uint32{}, 0, true
		for range n {
			a.perSec[a.rng.IntN(60)]++
		}
	}
	for ; a.sec < 60; a.sec++ {
		if a.perSec[a.sec] > 0 {
			a.perSec[a.sec]--
			return 60*int64(a.minute) + int64(a.sec), true
		}
	}
	a.drawn = false
	return 0, false
}
