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
	replays        int // inputs played again because the first play differed
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
		play(tb, f.addr, warm, false)
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
	// cut: the client's stream ended mid-frame, as a client that died
	// (HTTP/2): the connection can answer none of its streams, so which of
	// them ran is nothing the client can know, and a route that ran fewer
	// of them than the reference is no worse (never more, nor others).
	cut bool
}

// outcome is one input through the rig: what the reference saw, and per
// route what its app saw and what its client got back.
type outcome struct {
	want    []seen
	refHeld bool
	got     [][]seen
	answers []played
}

// sender plays stream to the server at addr as one client and returns
// what it got back. slow is the second play of an input that differed:
// the client waits longer for the server's last frames.
type sender func(tb testing.TB, addr string, stream []byte, slow bool) played

// The apps' quiet windows of an input's first play and of its replay.
const rigFastQuiet, rigSlowQuiet = 3 * time.Millisecond, 200 * time.Millisecond

// rigFastSettle bounds the wait for the apps on an input's first play
// (settle).
const rigFastSettle = 50 * time.Millisecond

// play sends stream to the reference and through every route at once,
// waits until the apps have seen all they will see (quiet: no request in
// flight and none started for that long), and takes what they saw.
func (g *rig) play(tb testing.TB, stream []byte, send sender, quiet time.Duration) outcome {
	g.clear()
	var wg sync.WaitGroup
	var ref played
	out := outcome{got: make([][]seen, len(g.fronts)), answers: make([]played, len(g.fronts))}
	refStream := stream
	if g.forReference != nil {
		refStream = g.forReference(stream)
	}
	slow := quiet >= rigSlowQuiet
	wg.Go(func() { ref = send(tb, g.refURL, refStream, slow) })
	for i, f := range g.fronts {
		wg.Go(func() { out.answers[i] = send(tb, f.addr, stream, slow) })
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
// started for quiet: at most 10 s, and at most rigFastSettle on an
// input's first play (quiet rigFastQuiet).
//
// The bound of a first play: a request whose body a dead client never
// finished is held by net/http's HTTP/2 server (the reference's, the
// apps') until it tears the connection down, a second after; waiting for
// it was most of the fuzzer's time. What such a request came to is then
// not compared on the first play (the recorder drops it when it ends,
// clear), which is no loss where a play differs (it is played again in
// full), and a loss only where the requests still in flight would have
// shown a difference the rest did not: a route may deliver fewer
// requests than the reference where its client was refused or cut its
// connection, so one of those still at the app after rigFastSettle is
// not checked on that play.
func (g *rig) settle(quiet time.Duration) {
	limit := 10 * time.Second
	if quiet < rigSlowQuiet {
		limit = rigFastSettle
	}
	apps := []*recorder{g.ref}
	for _, f := range g.fronts {
		apps = append(apps, f.app)
	}
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); {
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
		if diff := compareSeen(order(o.want), order(o.got[i]), refused(a.answers) || a.cut); diff != "" {
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
func (g *rig) input(t testing.TB, stream []byte, send sender, refused func([]byte) bool, order func([]seen) []seen) {
	problems := g.check(stream, g.play(t, stream, send, rigFastQuiet), refused, order)
	if len(problems) > 0 {
		g.replays++
		problems = g.check(stream, g.play(t, stream, send, rigSlowQuiet), refused, order)
	}
	for _, p := range problems {
		t.Error(p)
	}
	g.resources(t)
}

// resources are the resource oracles, run after each input.
func (g *rig) resources(t testing.TB) {
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
		// A server notices a client's close a moment later (an HTTP/2
		// one's goroutines, at hundreds of inputs a second): connections
		// that stay open for a second are kept, not late.
		n := f.app.open.Load()
		for deadline := time.Now().Add(time.Second); n > rigAppConns && time.Now().Before(deadline); n = f.app.open.Load() {
			time.Sleep(5 * time.Millisecond)
		}
		if n > rigAppConns {
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
