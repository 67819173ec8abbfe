package activator

import (
	"net"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// busyPoll trades a little CPU for latency when the activator is nearly
// idle. With one client in flight, most of a proxy hop's latency on a
// virtual machine is not the proxy's work but the wake-ups: every time a
// goroutine parks on a socket, its thread sleeps, the vCPU halts, and the
// next packet pays for an interrupt and a VM entry (about 50 us each on
// the development machines, against a few us of proxying). So a read that
// would park first polls its socket without blocking for up to budget:
// the answer of a fast replica, or a keep-alive client's next request,
// is then picked up by a running thread.
//
// It only spins while CPUs are spare: at most maxSpin reads at once
// (GOMAXPROCS - 1, at least 1) and only while the activator has no more
// requests open than GOMAXPROCS. Under load no read spins, so throughput
// and CPU per request are those of plain parking reads.
type busyPoll struct {
	budget   time.Duration
	maxSpin  int32
	busyAt   int64
	spinning atomic.Int32
	open     *atomic.Int64 // the activator's open requests

	spins, hits atomic.Int64 // reads that polled, and those that got data
}

func newBusyPoll(budget time.Duration, open *atomic.Int64) *busyPoll {
	if budget <= 0 {
		return nil
	}
	procs := runtime.GOMAXPROCS(0)
	return &busyPoll{budget: budget, maxSpin: int32(max(procs-1, 1)), busyAt: int64(procs), open: open}
}

// enter reports whether a read may spin now; leave must follow a true.
func (b *busyPoll) enter() bool {
	if b.open.Load() > b.busyAt {
		return false
	}
	if b.spinning.Add(1) > b.maxSpin {
		b.spinning.Add(-1)
		return false
	}
	return true
}

func (b *busyPoll) leave() { b.spinning.Add(-1) }

// listener wraps ln so the client connections it accepts poll.
func (b *busyPoll) listener(ln net.Listener) net.Listener {
	if b == nil {
		return ln
	}
	return pollListener{ln, b}
}

// dial wraps d (nil: fasthttp's TCP dialer) so replica connections poll.
func (b *busyPoll) dial(d fasthttp.DialFunc) fasthttp.DialFunc {
	if d == nil {
		d = fasthttp.Dial
	}
	if b == nil {
		return d
	}
	return func(addr string) (net.Conn, error) {
		c, err := d(addr)
		if err != nil {
			return nil, err
		}
		return b.wrap(c), nil
	}
}

type pollListener struct {
	net.Listener
	b *busyPoll
}

func (l pollListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.b.wrap(c), nil
}
