package ledger

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rig is the differential fuzzers' setup, started once per process (each
// fuzzing worker has its own) and kept across inputs: the reference app,
// and for each route an app with the route's proxies in front of it. An
// input is the same bytes played at once to the reference and through
// every route; each app's requests are taken and cleared between inputs.
// Starting the proxies for every input (as the fuzzers once did) held an
// input for their shutdown: a few inputs a second instead of hundreds.
//
// Besides the bytes, the rig checks what an input leaves behind in the
// process the proxies run in: goroutines, heap, and connections held open
// to the apps or to the client (resource oracles: a hop that answers
// right while keeping what it should let go fails here).
type rig struct {
	ref    *recorder
	refURL string
	fronts []rigFront
	// forReference is the input as the reference gets it (nil: the same):
	// where a hop reads what net/http refuses by a rule of the RFC's, the
	// reference gets the input that rule reads.
	forReference func([]byte) []byte

	baseGoroutines int
	baseHeap       uint64
	inputs         int
}

// rigFront is one route of the rig.
type rigFront struct {
	r    route
	app  *recorder
	addr string
}

// Bounds of the resource oracles. The proxies keep idle pooled
// connections to their apps and a goroutine for each, so a few dozen
// above the rig's start is normal; a leak per input crosses these within
// a few hundred inputs.
const (
	rigGoroutineSlack = 200
	rigGoroutineMany  = 5000
	rigGoroutineEvery = 256
	rigHeapSlack      = 64 << 20
	rigAppConns       = 32
	rigHeapEvery      = 64 // inputs between heap checks
)

// newRig starts the rig; it stops when tb ends.
func newRig(tb testing.TB) *rig {
	ref, refAddr := startRecorder(tb)
	g := &rig{ref: ref, refURL: refAddr}
	for _, r := range routes {
		app, appAddr := startRecorder(tb)
		g.fronts = append(g.fronts, rigFront{r: r, app: app, addr: front(tb, r, appAddr).addr})
	}
	// One request through each route first, so that the pools and their
	// goroutines exist before the baseline is taken.
	warm := []byte("GET /warm HTTP/1.1\r\nHost: " + host + "\r\n\r\n")
	for _, f := range g.fronts {
		play(tb, f.addr, warm)
	}
	g.settle(time.Second)
	g.clear()
	g.baseGoroutines = runtime.NumGoroutine()
	return g
}

// played is what a client got back for an input.
type played struct {
	answers []byte
	// held: the server still had the connection open when the client
	// stopped waiting (it had sent its whole input and, for HTTP/1.1,
	// closed its side).
	held bool
}

// outcome is one input through the rig: what the reference saw, and per
// route what its app saw and what its client got back.
type outcome struct {
	want    []seen
	refHeld bool
	got     [][]seen
	answers []played
}

// play sends stream to the reference and through every route at once,
// waits until the apps have seen all they will see (quiet: no request in
// flight and none started for that long), and takes what they saw.
func (g *rig) play(tb testing.TB, stream []byte, send func(testing.TB, string, []byte) played, quiet time.Duration) outcome {
	g.clear()
	var wg sync.WaitGroup
	var ref played
	out := outcome{got: make([][]seen, len(g.fronts)), answers: make([]played, len(g.fronts))}
	refStream := stream
	if g.forReference != nil {
		refStream = g.forReference(stream)
	}
	wg.Go(func() { ref = send(tb, g.refURL, refStream) })
	for i, f := range g.fronts {
		wg.Go(func() { out.answers[i] = send(tb, f.addr, stream) })
	}
	wg.Wait()
	g.settle(quiet)
	out.want, out.refHeld = g.ref.take(), ref.held
	for i, f := range g.fronts {
		out.got[i] = f.app.take()
	}
	return out
}

// settle waits until every app has had no request in flight and none
// started for quiet (at most 10 s).
func (g *rig) settle(quiet time.Duration) {
	apps := []*recorder{g.ref}
	for _, f := range g.fronts {
		apps = append(apps, f.app)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		calm := true
		for _, a := range apps {
			if !a.quietFor(quiet) {
				calm = false
				break
			}
		}
		if calm {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func (g *rig) clear() {
	g.ref.clear()
	for _, f := range g.fronts {
		f.app.clear()
	}
}

// check runs the fuzzers' rule on an outcome and returns the differences,
// one per route ("" for none), with held connections among them.
func (g *rig) check(stream []byte, o outcome, refused func([]byte) bool, order func([]seen) []seen) []string {
	var problems []string
	for i, f := range g.fronts {
		a := o.answers[i]
		if diff := compareSeen(order(o.want), order(o.got[i]), refused(a.answers)); diff != "" {
			problems = append(problems, fmt.Sprintf("%s: %s\nstream: %s\nreference saw: %s\nthe app behind it saw: %s\nanswers: %.300q",
				f.r, diff, short(stream), short(o.want), short(o.got[i]), a.answers))
		}
		if a.held && !o.refHeld {
			problems = append(problems, fmt.Sprintf("%s: the connection stayed open after the client sent its input and closed its side "+
				"(the reference closed it)\nstream: %s\nanswers: %.300q", f.r, short(stream), a.answers))
		}
	}
	return problems
}

// input is one fuzz input: played fast (a short quiet window), and played
// again with a long one before anything is reported, so that a difference
// that was only the timing of the apps' goroutines is not a finding.
func (g *rig) input(t *testing.T, stream []byte, send func(testing.TB, string, []byte) played, refused func([]byte) bool,
	order func([]seen) []seen) {
	const fast, slow = 3 * time.Millisecond, 200 * time.Millisecond
	problems := g.check(stream, g.play(t, stream, send, fast), refused, order)
	if len(problems) > 0 {
		problems = g.check(stream, g.play(t, stream, send, slow), refused, order)
	}
	for _, p := range problems {
		t.Error(p)
	}
	g.resources(t)
}

// resources are the resource oracles, run after each input.
func (g *rig) resources(t *testing.T) {
	g.inputs++
	// Goroutines: an HTTP/2 connection's go on for up to a second after
	// it closed (the server's GOAWAY timeout), so inputs at hundreds a
	// second keep many about. Every rigGoroutineEvery inputs, and whenever
	// there are very many, they must come back near the rig's start.
	if n := runtime.NumGoroutine(); g.inputs%rigGoroutineEvery == 0 || n > g.baseGoroutines+rigGoroutineMany {
		for deadline := time.Now().Add(5 * time.Second); n > g.baseGoroutines+rigGoroutineSlack && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
			n = runtime.NumGoroutine()
		}
		if n > g.baseGoroutines+rigGoroutineSlack {
			t.Errorf("%d goroutines 5 s after %d inputs, %d when the rig started: each input leaves some behind", n, g.inputs, g.baseGoroutines)
		}
	}
	for _, f := range append([]rigFront{{r: "reference", app: g.ref}}, g.fronts...) {
		if n := f.app.open.Load(); n > rigAppConns {
			t.Errorf("%s: %d connections open to its app after %d inputs (at most %d): connections to the app are not let go", f.r, n, g.inputs, rigAppConns)
		}
	}
	if g.inputs%rigHeapEvery != 0 {
		return
	}
	if g.inputs == rigHeapEvery {
		runtime.GC()
		g.baseHeap = heapInUse()
		return
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if m.HeapAlloc > g.baseHeap+rigHeapSlack {
		// Connections closed by the last inputs hold their buffers until
		// their goroutines end (an HTTP/2 server's, up to a second after
		// the close): at hundreds of inputs a second on a loaded machine,
		// 90 MiB of frame buffers. Their goroutines go first.
		for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > g.baseGoroutines+rigGoroutineSlack &&
			time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		runtime.GC()
		if h := heapInUse(); h > g.baseHeap+rigHeapSlack {
			t.Errorf("heap %d MiB after %d inputs and a GC, %d MiB after the first %d: something keeps what an input left (its profile: %s)",
				h>>20, g.inputs, g.baseHeap>>20, rigHeapEvery, heapProfile())
		}
	}
}

// heapInUse is the heap in use less what the fuzzing engine holds (under
// -fuzz its mutator allocates 100 MiB of its own once it starts
// mutating): read after a GC.
func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	records := make([]runtime.MemProfileRecord, 512)
	n, ok := runtime.MemProfile(records, false)
	for !ok {
		records = make([]runtime.MemProfileRecord, n+64)
		n, ok = runtime.MemProfile(records, false)
	}
	engine := uint64(0)
	for _, r := range records[:n] {
		frames := runtime.CallersFrames(r.Stack())
		for {
			f, more := frames.Next()
			if strings.HasPrefix(f.Function, "internal/fuzz.") {
				engine += uint64(r.InUseBytes())
				break
			}
			if !more {
				break
			}
		}
	}
	return m.HeapAlloc - min(engine, m.HeapAlloc)
}

// heapProfile writes the heap's profile to a temporary file and returns
// its path (or why it could not).
func heapProfile() string {
	f, err := os.CreateTemp("", "ebb-fuzz-heap-*.prof")
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		return err.Error()
	}
	return f.Name()
}

// countConns keeps a recorder's count of open connections.
func countConns(open *atomic.Int64) func(net.Conn, http.ConnState) {
	return func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
}
