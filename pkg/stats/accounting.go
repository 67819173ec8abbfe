package stats

import (
	"sync"
	"time"
)

// Arrival says how a request reached the reporter.
type Arrival uint8

// The arrivals. ViaActivator requests carry the activator's marker
// (ProxyMarker.Arrival says which is which).
const (
	Direct Arrival = iota
	ViaActivator
)

// Accounting measures the time-weighted average concurrency and the arrivals
// of requests between two reports, with Knative's RequestStats semantics:
// In and Out mark a request's arrival and end, Report cuts a window and
// starts the next one; requests in flight carry over.
//
// Time is an argument: Accounting reads no clock. Calls may come from many
// goroutines with slightly out-of-order times (each caller reads the clock
// before taking the lock); a time earlier than the last one seen counts as
// the last one, so the integral never runs backwards.
//
// The integrals are kept in integer request-nanoseconds, so averages are
// exact up to the final division. A mutex guards the state: In and Out each
// hold it for a few nanoseconds (BenchmarkAccounting measures it), which is
// cheaper and simpler than the lock-free alternatives, none of which can
// update the integral and the in-flight count atomically together.
type Accounting struct {
	mu sync.Mutex // guards every field below

	windowStart time.Time // start of the current window
	last        time.Time // time of the latest event; never moves backwards

	inFlight, proxiedInFlight int64 // requests in flight now

	// request-nanoseconds accumulated in this window up to last
	integral, proxiedIntegral int64

	requests, proxiedRequests uint64 // arrivals in this window
}

// Snapshot is what Report returns: one window's numbers.
type Snapshot struct {
	Period                    time.Duration // length of the window
	AverageConcurrency        float64
	AverageProxiedConcurrency float64
	RequestCount              uint64
	ProxiedRequestCount       uint64
	InFlight                  int64 // requests in flight when the window was cut
}

// NewAccounting returns an Accounting whose first window starts at now.
func NewAccounting(now time.Time) *Accounting {
	return &Accounting{windowStart: now, last: now}
}

// advance adds the area since the last event to the integrals. Callers hold mu.
func (a *Accounting) advance(now time.Time) {
	d := int64(now.Sub(a.last))
	if d <= 0 {
		return
	}
	a.integral += d * a.inFlight
	a.proxiedIntegral += d * a.proxiedInFlight
	a.last = now
}

// In records a request arriving at now.
func (a *Accounting) In(now time.Time, via Arrival) {
	a.mu.Lock()
	a.advance(now)
	a.inFlight++
	a.requests++
	if via == ViaActivator {
		a.proxiedInFlight++
		a.proxiedRequests++
	}
	a.mu.Unlock()
}

// Out records the end, at now, of a request recorded by In with the same via.
func (a *Accounting) Out(now time.Time, via Arrival) {
	a.mu.Lock()
	a.advance(now)
	a.inFlight--
	if via == ViaActivator {
		a.proxiedInFlight--
	}
	a.mu.Unlock()
}

// InFlight returns the number of requests in flight.
func (a *Accounting) InFlight() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.inFlight
}

// Report closes the window at now, returns its numbers and opens the next
// window at now. A window of zero length reports zero averages.
func (a *Accounting) Report(now time.Time) Snapshot {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.advance(now)
	period := a.last.Sub(a.windowStart)
	s := Snapshot{
		Period:              period,
		RequestCount:        a.requests,
		ProxiedRequestCount: a.proxiedRequests,
		InFlight:            a.inFlight,
	}
	if period > 0 {
		s.AverageConcurrency = float64(a.integral) / float64(period)
		s.AverageProxiedConcurrency = float64(a.proxiedIntegral) / float64(period)
	}
	a.windowStart = a.last
	a.integral, a.proxiedIntegral = 0, 0
	a.requests, a.proxiedRequests = 0, 0
	return s
}
