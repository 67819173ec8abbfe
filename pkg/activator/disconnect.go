package activator

import (
	"context"
	"net"
	"sync"
	"time"
)

// clientCheckInterval is the period of the checks of waiting requests'
// client connections: a client that went away frees its place in the
// queue within this time.
const clientCheckInterval = 200 * time.Millisecond

// clientWatch notices clients that go away while their request waits for
// a replica. fasthttp gives a handler no cancellation, and a goroutine per
// waiting request (up to Queue.Total of them) would cost more than the
// requests themselves; so one goroutine (run) peeks at every waiting
// request's connection each clientCheckInterval, without reading from it
// or blocking (clientGone, per platform), and wakes the waiter of a
// connection its client closed through the exchange's gone channel:
// throttle.wait then takes it out of the queue and refunds its budgets.
//
// A watched exchange is registered under mu with a generation; the peeks
// run without the lock (no lock across I/O), so a request may finish, and
// its exchange be reused, meanwhile: the waiter is woken only if it is
// still watched under the same generation.
type clientWatch struct {
	mu      sync.Mutex  // owns waiting and every exchange's watch fields
	waiting []*exchange // the watched requests, unordered

	scan []watched // run's copy of waiting; reused
	buf  [1]byte   // run's peek buffer
}

// watched is one entry of a scan.
type watched struct {
	x    *exchange
	gen  uint64
	conn net.Conn
}

// add watches the client connection of x while it waits. It reports false
// when c cannot be watched (not a socket, or not on this platform).
func (w *clientWatch) add(x *exchange, c net.Conn) bool {
	if !canPeek(c) {
		return false
	}
	w.mu.Lock()
	x.conn, x.watchIdx = c, len(w.waiting)
	x.watchGen++
	w.waiting = append(w.waiting, x)
	w.mu.Unlock()
	return true
}

// remove stops watching x (added before) and drains a wake-up that came
// too late to matter, so the pooled exchange starts clean.
func (w *clientWatch) remove(x *exchange) {
	w.mu.Lock()
	i, last := x.watchIdx, len(w.waiting)-1
	w.waiting[i] = w.waiting[last]
	w.waiting[i].watchIdx = i
	w.waiting[last] = nil
	w.waiting = w.waiting[:last]
	x.conn, x.watchIdx = nil, -1
	w.mu.Unlock()
	select {
	case <-x.gone:
	default:
	}
}

// len returns the number of watched requests.
func (w *clientWatch) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.waiting)
}

// run checks the watched connections every clientCheckInterval until ctx
// ends.
func (w *clientWatch) run(ctx context.Context, clock Clock) {
	t := clock.NewTicker(clientCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		w.check()
	}
}

// check peeks at every watched connection once and wakes the waiters
// whose client went away. It returns how many it woke.
func (w *clientWatch) check() int {
	w.mu.Lock()
	for _, x := range w.waiting {
		w.scan = append(w.scan, watched{x: x, gen: x.watchGen, conn: x.conn})
	}
	w.mu.Unlock()
	gone := w.scan[:0] // filtered in place
	for _, s := range w.scan {
		if clientGone(s.conn, w.buf[:]) {
			gone = append(gone, s)
		}
	}
	woken := 0
	if len(gone) > 0 {
		w.mu.Lock()
		for _, s := range gone {
			if s.x.watchIdx >= 0 && s.x.watchGen == s.gen {
				select {
				case s.x.gone <- struct{}{}:
				default:
				}
				woken++
			}
		}
		w.mu.Unlock()
	}
	clear(w.scan) // keep no connection alive
	w.scan = w.scan[:0]
	return woken
}
