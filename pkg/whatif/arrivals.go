package whatif

// ArrivalSecond is the second of the trace at which the i-th (0-based) of
// the n invocations of minute m (1-based) arrives:
// 60*(m-1) + floor((i + 0.5) * 60 / n), spread evenly over the minute and
// deterministic. It computes the floor in integers, (2i+1)*30/n, so no
// rounding of floating point can move an arrival to another second.
func ArrivalSecond(m, i, n int) int64 {
	return 60*int64(m-1) + (2*int64(i)+1)*30/int64(n)
}

// arrivals yields the arrival seconds of a function in order, one minute
// at a time, without holding a day of them.
type arrivals struct {
	list   []int64 // Function.Arrivals, when given: taken as they are
	counts []uint32
	minute int // 0-based index of the current minute
	i      int // next invocation of the current minute
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
		if a.i < n {
			s := ArrivalSecond(a.minute+1, a.i, n)
			a.i++
			return s, true
		}
		a.minute, a.i = a.minute+1, 0
	}
	return 0, false
}
