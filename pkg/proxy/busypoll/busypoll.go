// Package busypoll owns how the proxies' sockets wait for their peers: a
// read polls a little while a proxy is nearly idle (a little CPU for
// latency), and a write followed by the read of its answer waits without
// a read that comes up empty (Turn, turn.go); and its connections read
// and write the socket with system calls the runtime is not told about,
// so its monitor thread does not wake every 20 µs to take back the P of
// a call that never blocks (rawio_linux.go). It is shared by the
// activator and the queue-proxy.
//
// With one client in flight, most of a proxy hop's latency on a virtual
// machine is not the proxy's work but the wake-ups: every time a goroutine
// parks on a socket, its thread sleeps, the vCPU halts, and the next
// packet pays for an interrupt and a VM entry (about 50 us each on the
// development machines, against a few us of proxying). So a read that
// would park first polls its socket without blocking for up to a budget:
// the answer of a fast upstream, or a keep-alive client's next request, is
// then picked up by a running thread.
//
// It only spins while CPUs are spare: at most GOMAXPROCS - 1 reads (at
// least 1) at once, only while the proxy has no more requests open than
// half of GOMAXPROCS (at least 1), and a spinning read yields to any
// goroutine that can run between two polls. A connection whose poll came
// up empty backs off (pollConn). A poll that finds the CPUs busy (a round
// of it took long: other goroutines ran, or the system gave the CPU to
// another process) stops, and the next quietReads reads of the process
// do not poll: under load a parked read costs no wake-up of an idle vCPU,
// and a spinning one only CPU. Under load reads hardly spin: measured
// with wrk -c50 on 2 vCPUs, the activator's throughput is within 2-4% of
// never polling (the noise of the machine is about 3%). Linux only;
// elsewhere connections are left as they are.
package busypoll

import (
	"net"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// busyIteration: a round of a poll (a read and a yield) that took longer
// found the CPUs busy; quietReads reads then skip polling. An idle
// machine's round is a microsecond or two.
const (
	busyIteration = 20 * time.Microsecond
	quietReads    = 256
)

// Poller decides when reads poll and wraps connections so they do (and
// take their turns, Turn). A nil Poller wraps nothing.
type Poller struct {
	budget   time.Duration
	maxSpin  int32
	busyAt   int64
	spinning atomic.Int32
	open     *atomic.Int64 // the proxy's open requests
	// quiet is the number of reads that skip polling because a recent
	// poll found the CPUs busy: one of its rounds took longer than
	// busyRound (busyIteration; tests that must see polls raise it).
	quiet     atomic.Int32
	busyRound time.Duration

	spins, hits atomic.Int64 // reads that polled, and those that got data
}

// New returns a Poller that polls for up to budget while open (the
// proxy's requests in progress) is at most half of GOMAXPROCS (at least
// 1). With a budget that is not positive it never polls, but its
// connections still take their turns (Turner).
func New(budget time.Duration, open *atomic.Int64) *Poller {
	budget = max(budget, 0)
	procs := runtime.GOMAXPROCS(0)
	return &Poller{budget: budget, maxSpin: int32(max(procs-1, 1)), busyAt: int64(max(procs/2, 1)), open: open,
		busyRound: busyIteration}
}

// Stats returns the number of reads that polled and of those that got
// their data by polling.
func (b *Poller) Stats() (spins, hits int64) {
	if b == nil {
		return 0, 0
	}
	return b.spins.Load(), b.hits.Load()
}

// enter reports whether a read may spin now; leave must follow a true.
func (b *Poller) enter() bool {
	if b.budget == 0 || b.open.Load() > b.busyAt {
		return false
	}
	if q := b.quiet.Load(); q > 0 {
		b.quiet.Add(-1)
		return false
	}
	if b.spinning.Add(1) > b.maxSpin {
		b.spinning.Add(-1)
		return false
	}
	return true
}

func (b *Poller) leave() { b.spinning.Add(-1) }

// Listener wraps ln so the connections it accepts poll.
func (b *Poller) Listener(ln net.Listener) net.Listener {
	if b == nil {
		return ln
	}
	return pollListener{ln, b}
}

// Dial wraps d so the connections it opens poll; nil stays nil (see
// DialTimeout for fasthttp's own dialer).
func (b *Poller) Dial(d fasthttp.DialFunc) fasthttp.DialFunc {
	if b == nil || d == nil {
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

// DialTimeout is fasthttp's own TCP dialer (what a HostClient without a
// Dial uses) with polling connections, for HostClient.DialTimeout; nil
// for a nil Poller.
func (b *Poller) DialTimeout() fasthttp.DialFuncWithTimeout {
	if b == nil {
		return nil
	}
	return func(addr string, timeout time.Duration) (net.Conn, error) {
		c, err := fasthttp.DialTimeout(addr, timeout)
		if err != nil {
			return nil, err
		}
		return b.wrap(c), nil
	}
}

type pollListener struct {
	net.Listener
	b *Poller
}

func (l pollListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.b.wrap(c), nil
}
