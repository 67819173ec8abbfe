package ledger

import (
	"os"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"
)

// fuzzRig is what the differential fuzzers run each input against: the
// reference server and the three routes, each route in front of its own
// recorder, started once (before f.Fuzz, in each fuzzing worker) and kept
// across inputs. Before, every input started and drained its own proxies
// (about 0.1 inputs a second); an input now costs its four plays, at
// once, and the quiet that ends it.
type fuzzRig struct {
	ref     *recorder
	refAddr string
	apps    []*recorder // by route
	doors   []door      // by route

	base     usage // after the first input
	measured bool
	allocs   uint64 // bytes the process allocated during the last input
}

// newFuzzRig starts the reference and the routes until the fuzz target
// ends.
func newFuzzRig(f *testing.F) *fuzzRig {
	g := &fuzzRig{}
	g.ref, g.refAddr = startRecorder(f)
	for _, r := range routes {
		app, addr := startRecorder(f)
		g.apps = append(g.apps, app)
		g.doors = append(g.doors, front(f, r, addr))
	}
	return g
}

// fuzzQuiet is how long every app must have seen no new request, none in
// flight, before an input is over: a request still on its way through a
// route (a cut body the chain's second hop still forwards) lands within
// it, so it is never counted as the next input's.
const fuzzQuiet = 5 * time.Millisecond

// run plays stream to the reference and to each route at once, waits for
// the quiet, and returns what the reference saw, what each route's app
// saw, and each route's answers.
func (g *fuzzRig) run(t *testing.T, stream []byte, play func(addr string, stream []byte) ([]byte, error)) (want []seen, got [][]seen, answers [][]byte) {
	all := append([]*recorder{g.ref}, g.apps...)
	addrs := []string{g.refAddr}
	for _, d := range g.doors {
		addrs = append(addrs, d.addr)
	}
	for _, rc := range all {
		rc.reset()
	}
	before := allocated()
	out := make([][]byte, len(addrs))
	errs := make([]error, len(addrs))
	var wg sync.WaitGroup
	for i, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = play(addr, stream)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("playing to %s: %v", addrs[i], err)
		}
	}
	settle(all)
	g.allocs = allocated() - before
	for _, rc := range g.apps {
		got = append(got, rc.take())
	}
	return g.ref.take(), got, out[1:]
}

// settle waits, up to 10 s, until no recorder has a request in flight and
// none arrived for fuzzQuiet.
func settle(all []*recorder) {
	last := -1
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		n, idle := 0, true
		for _, rc := range all {
			a, i := rc.arrivals()
			n, idle = n+a, idle && i
		}
		if idle && n == last {
			return
		}
		if idle {
			last = n
		} else {
			last = -1
		}
		time.Sleep(fuzzQuiet)
	}
}

// usage is what the process holds: with the bytes an input allocates,
// the resource oracles of the fuzzers.
type usage struct {
	goroutines int
	fds        int // open file descriptors (sockets, mostly)
}

// The most an input may leave behind, beyond what the first input left
// (pools warmed, connections kept alive): a proxy that leaks a goroutine
// or a connection per input crosses a bound within a few hundred inputs
// of one worker. maxInputAllocs bounds what the process (the reference,
// the three routes and their apps) allocates for one input of at most 64
// KiB played four times: a few MiB when all is well, so a proxy that
// buffers hundreds of MiB for one input is caught by that input, even
// if it frees them after. (The live heap is no oracle here: the fuzzing
// engine itself grows a worker's by about 100 MiB once it starts
// mutating.)
const (
	slackGoroutines = 200
	slackFDs        = 100
	maxInputAllocs  = 64 << 20
)

func measure() usage {
	u := usage{goroutines: runtime.NumGoroutine()}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		u.fds = len(fds)
	}
	return u
}

// allocated is the bytes the process has allocated so far.
func allocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func (u usage) within(base usage) bool {
	return u.goroutines <= base.goroutines+slackGoroutines && u.fds <= base.fds+slackFDs
}

// checkResources fails the input if it allocated more than
// maxInputAllocs, or if, 2 s after it, the process still holds more than
// the slack beyond the first input's usage.
func (g *fuzzRig) checkResources(t *testing.T) {
	if g.allocs > maxInputAllocs {
		t.Errorf("this input made the process allocate %s, want at most %s", mib(g.allocs), mib(maxInputAllocs))
	}
	if !g.measured {
		g.base, g.measured = measure(), true
		return
	}
	u := measure()
	for deadline := time.Now().Add(2 * time.Second); !u.within(g.base) && time.Now().Before(deadline); u = measure() {
		time.Sleep(50 * time.Millisecond)
	}
	if !u.within(g.base) {
		t.Errorf("after this input the process holds %d goroutines and %d open files; after the first input it held %d and %d "+
			"(allowed: %d and %d more)", u.goroutines, u.fds, g.base.goroutines, g.base.fds, slackGoroutines, slackFDs)
	}
}
